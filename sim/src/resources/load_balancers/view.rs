//! What the API shows of a load balancer, with each target's health per
//! service, and where a connection to its private IP goes.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::{Algorithm, Listening, LoadBalancer, Protocol, Service, Target, TargetKind};
use crate::catalog::location;
use crate::ids::Id;
use crate::load_balancer_types::load_balancer_type;
use crate::resources::servers::ServerStatus;
use crate::state::World;

/// A server's health for one service: healthy when it runs and its
/// health-check port answers. Without a view of the ports (`None`), as in
/// saved state, health is unknown.
pub fn health_of(
    world: &World,
    server: Id,
    service: &Service,
    listening: Option<&Listening>,
) -> &'static str {
    let Some(listening) = listening else {
        return "unknown";
    };
    let running = world
        .servers
        .get(&server)
        .is_some_and(|s| s.status == ServerStatus::Running);
    if running && listening.contains(&(server, service.health_check.port)) {
        "healthy"
    } else {
        "unhealthy"
    }
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "tcp",
        Protocol::Http => "http",
        Protocol::Https => "https",
    }
}

fn service_json(s: &Service) -> Value {
    let check = &s.health_check;
    json!({
        "protocol": protocol_name(s.protocol),
        "listen_port": s.listen_port,
        "destination_port": s.destination_port,
        "proxyprotocol": s.proxyprotocol,
        "http": s.http.as_ref().map(|h| json!({
            "cookie_name": h.cookie_name,
            "cookie_lifetime": h.cookie_lifetime,
            "certificates": h.certificates,
            "redirect_http": h.redirect_http,
            "sticky_sessions": h.sticky_sessions,
            "timeout_idle": h.timeout_idle,
        })),
        "health_check": {
            "protocol": protocol_name(check.protocol),
            "port": check.port,
            "interval": check.interval,
            "timeout": check.timeout,
            "retries": check.retries,
            "http": check.http.as_ref().map(|h| json!({
                "domain": h.domain,
                "path": h.path,
                "response": h.response,
                "status_codes": h.status_codes,
                "tls": h.tls,
            })),
        },
    })
}

fn ipv6_address(net: &str) -> String {
    format!("{}1", net.trim_end_matches("/64"))
}

impl LoadBalancer {
    fn health_json(&self, world: &World, server: Id, listening: Option<&Listening>) -> Value {
        self.services
            .iter()
            .map(|s| json!({"listen_port": s.listen_port, "status": health_of(world, server, s, listening)}))
            .collect()
    }

    fn target_json(&self, world: &World, target: &Target, listening: Option<&Listening>) -> Value {
        let servers = world.target_servers(self, target);
        match &target.kind {
            TargetKind::Server { server } => json!({
                "type": "server",
                "server": {"id": server},
                "use_private_ip": target.use_private_ip,
                "health_status": self.health_json(world, *server, listening),
            }),
            TargetKind::LabelSelector { selector } => {
                let members: Vec<Value> = servers
                    .iter()
                    .map(|id| {
                        json!({
                            "type": "server",
                            "server": {"id": id},
                            "use_private_ip": target.use_private_ip,
                            "health_status": self.health_json(world, *id, listening),
                        })
                    })
                    .collect();
                json!({
                    "type": "label_selector",
                    "label_selector": {"selector": selector},
                    "use_private_ip": target.use_private_ip,
                    "targets": members,
                })
            }
        }
    }

    pub fn to_api(&self, world: &World, listening: Option<&Listening>) -> Value {
        let kind = load_balancer_type(&self.load_balancer_type);
        let services: Vec<Value> = self.services.iter().map(service_json).collect();
        let targets: Vec<Value> = self
            .targets
            .iter()
            .map(|t| self.target_json(world, t, listening))
            .collect();
        let (public_ipv4, public_ipv6) = if self.public_enabled {
            (
                json!({"ip": self.public_ipv4, "dns_ptr": format!("static.{}.clients.your-server.de", self.public_ipv4)}),
                json!({"ip": ipv6_address(&self.public_ipv6), "dns_ptr": null}),
            )
        } else {
            (
                json!({"ip": null, "dns_ptr": null}),
                json!({"ip": null, "dns_ptr": null}),
            )
        };
        json!({
            "id": self.id,
            "name": self.name,
            "labels": self.labels,
            "created": self.created.rfc3339(),
            "load_balancer_type": kind.map(|k| k.to_api()),
            "location": location(&self.location).map(|l| l.to_api()),
            "algorithm": {"type": match self.algorithm {
                Algorithm::RoundRobin => "round_robin",
                Algorithm::LeastConnections => "least_connections",
            }},
            "public_net": {"enabled": self.public_enabled, "ipv4": public_ipv4, "ipv6": public_ipv6},
            "private_net": self.private_net.iter().map(|p| json!({"network": p.network, "ip": p.ip.to_string()})).collect::<Vec<_>>(),
            "protection": {"delete": self.delete_protected},
            "services": services,
            "targets": targets,
            "included_traffic": kind.map_or(0, |k| k.included_traffic()),
            "ingoing_traffic": 0,
            "outgoing_traffic": 0,
        })
    }
}

/// Where a connection to a load balancer's private IP and port goes.
pub struct Route {
    /// The healthy targets' servers, in target order.
    pub servers: Vec<Id>,
    pub destination_port: u16,
}

impl World {
    /// The load balancer service answering at `ip:port` on a private
    /// network, with its healthy targets; `None` when no load balancer
    /// has that address.
    pub fn load_balancer_route(
        &self,
        network: Id,
        ip: Ipv4Addr,
        port: u16,
        listening: &Listening,
    ) -> Option<Option<Route>> {
        let lb = self.load_balancers.values().find(|lb| {
            lb.private_net
                .iter()
                .any(|p| p.network == network && p.ip == ip)
        })?;
        let Some(service) = lb.service(port) else {
            return Some(None);
        };
        let mut servers = Vec::new();
        for target in lb.targets.iter().filter(|t| t.use_private_ip) {
            for server in self.target_servers(lb, target) {
                if !servers.contains(&server)
                    && health_of(self, server, service, Some(listening)) == "healthy"
                {
                    servers.push(server);
                }
            }
        }
        Some(Some(Route {
            servers,
            destination_port: service.destination_port,
        }))
    }
}
