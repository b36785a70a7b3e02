//! Private networks: an RFC 1918 range, cloud subnets per network zone,
//! routes, and the servers attached to them (attaching is the server's
//! request, in `servers::attachments`).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::actions::{Completion, NewAction};
use crate::catalog::is_network_zone;
use crate::clock::Timestamp;
use crate::errors::{ApiError, FieldErrors};
use crate::events::SimEvent;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};
use crate::resources::{check_name, checked_labels};
use crate::state::World;

/// Servers one network can hold.
pub const NETWORK_SERVER_LIMIT: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubnetType {
    Cloud,
    /// The old name of `cloud`, still accepted.
    Server,
    Vswitch,
}

impl SubnetType {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "cloud" => Some(Self::Cloud),
            "server" => Some(Self::Server),
            "vswitch" => Some(Self::Vswitch),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Cloud => "cloud",
            Self::Server => "server",
            Self::Vswitch => "vswitch",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subnet {
    pub kind: SubnetType,
    pub ip_range: Ipv4Net,
    pub network_zone: String,
    /// False while its `add_subnet` action runs: servers cannot get IPs there yet.
    pub ready: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub destination: Ipv4Net,
    pub gateway: Ipv4Addr,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Network {
    pub id: Id,
    pub name: String,
    pub ip_range: Ipv4Net,
    pub subnets: Vec<Subnet>,
    pub routes: Vec<Route>,
    pub labels: Labels,
    pub delete_protected: bool,
    pub expose_routes_to_vswitch: bool,
    pub created: Timestamp,
}

/// A subnet as requested, before it is checked.
#[derive(Debug, Clone, Default)]
pub struct SubnetSpec {
    pub kind: String,
    pub ip_range: Option<String>,
    pub network_zone: String,
}

/// A route as requested, before it is checked.
#[derive(Debug, Clone, Default)]
pub struct RouteSpec {
    pub destination: String,
    pub gateway: String,
}

impl Network {
    /// Hetzner's router in this network: the first host of the whole range,
    /// which is also every subnet's `gateway`.
    pub fn gateway(&self) -> Ipv4Addr {
        first_host(self.ip_range)
    }

    pub fn subnet_containing(&self, ip: Ipv4Addr) -> Option<&Subnet> {
        self.subnets.iter().find(|s| s.ip_range.contains(&ip))
    }

    /// Addresses no server can have: a subnet's network and broadcast
    /// addresses and the network's gateway.
    pub fn is_reserved(&self, ip: Ipv4Addr) -> bool {
        ip == self.gateway()
            || self
                .subnet_containing(ip)
                .is_some_and(|s| ip == s.ip_range.network() || ip == s.ip_range.broadcast())
    }

    pub fn to_api(&self, world: &World) -> Value {
        let gateway = self.gateway().to_string();
        let subnets: Vec<Value> = self
            .subnets
            .iter()
            .map(|s| {
                json!({
                    "type": s.kind.as_str(),
                    "ip_range": s.ip_range.to_string(),
                    "network_zone": s.network_zone,
                    "gateway": gateway,
                    "vswitch_id": null,
                })
            })
            .collect();
        let routes: Vec<Value> = self
            .routes
            .iter()
            .map(|r| json!({"destination": r.destination.to_string(), "gateway": r.gateway.to_string()}))
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "ip_range": self.ip_range.to_string(),
            "subnets": subnets,
            "routes": routes,
            "servers": world.network_members(self.id),
            "load_balancers": [],
            "protection": {"delete": self.delete_protected},
            "labels": self.labels,
            "created": self.created.rfc3339(),
            "expose_routes_to_vswitch": self.expose_routes_to_vswitch,
        })
    }
}

impl Sortable for Network {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "name" => SortKey::Text(self.name.clone()),
            "created" => SortKey::Int(self.created.millis() as i64),
            _ => SortKey::Int(self.id),
        }
    }
}

fn first_host(range: Ipv4Net) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(range.network()).saturating_add(1))
}

const PRIVATE_RANGES: [&str; 3] = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];

/// A CIDR written as a network address (`10.0.0.0/16`, not `10.0.0.7/16`).
pub fn parse_cidr(text: &str) -> Result<Ipv4Net, String> {
    let net: Ipv4Net = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not an IPv4 CIDR"))?;
    if net != net.trunc() {
        return Err(format!(
            "'{text}' is not a network address; did you mean {}?",
            net.trunc()
        ));
    }
    Ok(net)
}

fn parse_network_range(text: &str) -> Result<Ipv4Net, String> {
    let net = parse_cidr(text)?;
    let private = PRIVATE_RANGES
        .iter()
        .filter_map(|r| r.parse::<Ipv4Net>().ok())
        .any(|r| r.contains(&net));
    if !private {
        return Err("must be within an RFC 1918 private range".into());
    }
    if !(8..=30).contains(&net.prefix_len()) {
        return Err("prefix length must be between /8 and /30".into());
    }
    Ok(net)
}

fn overlaps(a: Ipv4Net, b: Ipv4Net) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

impl World {
    /// Servers attached to `network`, by ID.
    pub fn network_members(&self, network: Id) -> Vec<Id> {
        self.servers
            .values()
            .filter(|s| s.private_net.iter().any(|p| p.network == network))
            .map(|s| s.id)
            .collect()
    }

    /// True when a server has `ip` in `network`, as main or alias IP.
    pub fn ip_in_use(&self, network: Id, ip: Ipv4Addr) -> bool {
        self.servers.values().any(|s| {
            s.private_net
                .iter()
                .any(|p| p.network == network && (p.ip == ip || p.alias_ips.contains(&ip)))
        })
    }

    /// The lowest free address in a ready subnet of `zone`.
    pub fn free_ip(
        &self,
        network: &Network,
        zone: &str,
        within: Option<Ipv4Net>,
    ) -> Option<Ipv4Addr> {
        network
            .subnets
            .iter()
            .filter(|s| s.ready && s.network_zone == zone && s.kind != SubnetType::Vswitch)
            .filter(|s| within.is_none_or(|w| overlaps(w, s.ip_range)))
            .flat_map(|s| s.ip_range.hosts())
            .filter(|ip| within.is_none_or(|w| w.contains(ip)))
            .find(|ip| !network.is_reserved(*ip) && !self.ip_in_use(network.id, *ip))
    }

    fn check_subnet(
        &self,
        network: &Network,
        spec: &SubnetSpec,
        taken: &[Subnet],
    ) -> Result<Subnet, ApiError> {
        let mut errors = FieldErrors::default();
        let kind = SubnetType::parse(&spec.kind);
        match kind {
            None => errors.push("type", "must be one of cloud, server, vswitch"),
            Some(SubnetType::Vswitch) => errors.push(
                "type",
                "vswitch subnets need a Robot vSwitch, which hct-sim does not emulate",
            ),
            Some(_) => {}
        }
        if !is_network_zone(&spec.network_zone) {
            errors.push(
                "network_zone",
                format!("unknown network zone '{}'", spec.network_zone),
            );
        }
        let ip_range = match &spec.ip_range {
            Some(text) => match parse_cidr(text) {
                Ok(range) if !network.ip_range.contains(&range) => {
                    errors.push(
                        "ip_range",
                        format!("must be within the network's range {}", network.ip_range),
                    );
                    None
                }
                Ok(range) if taken.iter().any(|s| overlaps(s.ip_range, range)) => {
                    errors.push("ip_range", "overlaps with an existing subnet");
                    None
                }
                Ok(range) if range.prefix_len() > 30 => {
                    errors.push("ip_range", "subnets must be /30 or larger");
                    None
                }
                Ok(range) => Some(range),
                Err(message) => {
                    errors.push("ip_range", message);
                    None
                }
            },
            // The first free /24, as the API picks it.
            None => match network
                .ip_range
                .subnets(24.max(network.ip_range.prefix_len()))
            {
                Ok(mut candidates) => {
                    let free = candidates.find(|c| !taken.iter().any(|s| overlaps(s.ip_range, *c)));
                    if free.is_none() {
                        errors.push("ip_range", "no free range left in the network");
                    }
                    free
                }
                Err(_) => {
                    errors.push("ip_range", "no free range left in the network");
                    None
                }
            },
        };
        errors.into_result()?;
        match (kind, ip_range) {
            (Some(kind), Some(ip_range)) => Ok(Subnet {
                kind,
                ip_range,
                network_zone: spec.network_zone.clone(),
                ready: true,
            }),
            _ => Err(ApiError::field("subnets", "invalid subnet")),
        }
    }

    fn check_route(&self, network: &Network, spec: &RouteSpec) -> Result<Route, ApiError> {
        let mut errors = FieldErrors::default();
        let destination = parse_cidr(&spec.destination)
            .map_err(|message| errors.push("destination", message))
            .ok();
        let gateway = match spec.gateway.trim().parse::<Ipv4Addr>() {
            Ok(ip) if !network.ip_range.contains(&ip) => {
                errors.push(
                    "gateway",
                    format!("must be within the network's range {}", network.ip_range),
                );
                None
            }
            Ok(ip) if ip == network.gateway() || ip == network.ip_range.network() => {
                errors.push("gateway", format!("{ip} is reserved by the network"));
                None
            }
            Ok(ip) => Some(ip),
            Err(_) => {
                errors.push(
                    "gateway",
                    format!("'{}' is not an IPv4 address", spec.gateway),
                );
                None
            }
        };
        errors.into_result()?;
        match (destination, gateway) {
            (Some(destination), Some(gateway)) => Ok(Route {
                destination,
                gateway,
            }),
            _ => Err(ApiError::field("routes", "invalid route")),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn create_network(
        &mut self,
        name: String,
        ip_range: &str,
        subnets: Vec<SubnetSpec>,
        routes: Vec<RouteSpec>,
        labels: Labels,
        expose_routes_to_vswitch: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        check_name(&name)?;
        let labels = checked_labels(labels)?;
        let ip_range = parse_network_range(ip_range).map_err(|m| ApiError::field("ip_range", m))?;
        if self.networks.values().any(|n| n.name == name) {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        let mut network = Network {
            id: 0,
            name,
            ip_range,
            subnets: Vec::new(),
            routes: Vec::new(),
            labels,
            delete_protected: false,
            expose_routes_to_vswitch,
            created: now,
        };
        for spec in &subnets {
            let subnet = self.check_subnet(&network, spec, &network.subnets)?;
            network.subnets.push(subnet);
        }
        for spec in &routes {
            let route = self.check_route(&network, spec)?;
            network.routes.push(route);
        }
        network.id = self.next_id(Some(ResourceKind::Network));
        let id = network.id;
        self.networks.insert(id, network);
        Ok(id)
    }

    pub fn update_network(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
        expose_routes_to_vswitch: Option<bool>,
    ) -> Result<(), ApiError> {
        self.network(id)?;
        if let Some(name) = &name {
            check_name(name)?;
            if self
                .networks
                .values()
                .any(|n| n.id != id && &n.name == name)
            {
                return Err(ApiError::Uniqueness { field: "name" });
            }
        }
        let labels = labels.map(checked_labels).transpose()?;
        let network = self.network_mut(id)?;
        if let Some(name) = name {
            network.name = name;
        }
        if let Some(labels) = labels {
            network.labels = labels;
        }
        if let Some(expose) = expose_routes_to_vswitch {
            network.expose_routes_to_vswitch = expose;
        }
        Ok(())
    }

    /// Deleting a network detaches whatever is attached to it.
    pub fn delete_network(&mut self, id: Id) -> Result<(), ApiError> {
        if self.network(id)?.delete_protected {
            return Err(ApiError::Protected { kind: "network" });
        }
        self.ensure_unlocked(ResourceRef::network(id))?;
        self.networks.remove(&id);
        let mut detached = Vec::new();
        for server in self.servers.values_mut() {
            if let Some(p) = server.private_net.iter().find(|p| p.network == id) {
                detached.push((server.id, p.ip));
            }
            server.private_net.retain(|p| p.network != id);
        }
        for (server, ip) in detached {
            self.emit(SimEvent::DetachedFromNetwork {
                server,
                network: id,
                ip,
            });
        }
        Ok(())
    }

    pub fn add_subnet(&mut self, id: Id, spec: SubnetSpec, now: Timestamp) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let mut subnet = self.check_subnet(network, &spec, &network.subnets)?;
        subnet.ready = false;
        let ip_range = subnet.ip_range;
        self.network_mut(id)?.subnets.push(subnet);
        let completion = Completion::SubnetReady {
            network: id,
            ip_range,
        };
        Ok(self.start_action(
            NewAction::on("add_subnet", ResourceRef::network(id), completion),
            now,
        ))
    }

    pub fn delete_subnet(
        &mut self,
        id: Id,
        ip_range: &str,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let range = parse_cidr(ip_range).map_err(|m| ApiError::field("ip_range", m))?;
        if !network.subnets.iter().any(|s| s.ip_range == range) {
            return Err(ApiError::field(
                "ip_range",
                format!("no subnet {range} in this network"),
            ));
        }
        let in_use = self.servers.values().any(|s| {
            s.private_net
                .iter()
                .any(|p| p.network == id && range.contains(&p.ip))
        });
        if in_use {
            return Err(ApiError::ResourceInUse(format!(
                "subnet {range} has attached servers; detach them first"
            )));
        }
        self.network_mut(id)?
            .subnets
            .retain(|s| s.ip_range != range);
        Ok(self.start_action(
            NewAction::on(
                "delete_subnet",
                ResourceRef::network(id),
                Completion::Nothing,
            ),
            now,
        ))
    }

    pub fn add_route(&mut self, id: Id, spec: RouteSpec, now: Timestamp) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let route = self.check_route(network, &spec)?;
        if network
            .routes
            .iter()
            .any(|r| r.destination == route.destination)
        {
            return Err(ApiError::Uniqueness {
                field: "destination",
            });
        }
        let destination = route.destination;
        self.network_mut(id)?.routes.push(route);
        let completion = Completion::RouteAdded {
            network: id,
            destination,
        };
        Ok(self.start_action(
            NewAction::on("add_route", ResourceRef::network(id), completion),
            now,
        ))
    }

    pub fn delete_route(
        &mut self,
        id: Id,
        spec: RouteSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let route = self.check_route(network, &spec)?;
        if !network.routes.contains(&route) {
            return Err(ApiError::field(
                "destination",
                format!("no route to {} via {}", route.destination, route.gateway),
            ));
        }
        self.network_mut(id)?.routes.retain(|r| *r != route);
        Ok(self.start_action(
            NewAction::on(
                "delete_route",
                ResourceRef::network(id),
                Completion::Nothing,
            ),
            now,
        ))
    }

    /// `add_subnet` finished: the subnet takes servers.
    pub(crate) fn subnet_ready(&mut self, network: Id, ip_range: Ipv4Net) {
        if let Some(n) = self.networks.get_mut(&network)
            && let Some(subnet) = n.subnets.iter_mut().find(|s| s.ip_range == ip_range)
        {
            subnet.ready = true;
        }
    }

    /// A failed `add_subnet` takes the subnet away again.
    pub(crate) fn discard_subnet(&mut self, network: Id, ip_range: Ipv4Net) {
        if let Some(n) = self.networks.get_mut(&network) {
            n.subnets.retain(|s| s.ip_range != ip_range);
        }
    }

    /// A failed `add_route` takes the route away again.
    pub(crate) fn discard_route(&mut self, network: Id, destination: Ipv4Net) {
        if let Some(n) = self.networks.get_mut(&network) {
            n.routes.retain(|r| r.destination != destination);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world_with_network() -> (World, Id) {
        let mut world = World::default();
        let id = world
            .create_network(
                "net".into(),
                "10.0.0.0/16",
                vec![SubnetSpec {
                    kind: "cloud".into(),
                    ip_range: Some("10.0.1.0/24".into()),
                    network_zone: "eu-central".into(),
                }],
                vec![RouteSpec {
                    destination: "0.0.0.0/0".into(),
                    gateway: "10.0.1.2".into(),
                }],
                Labels::new(),
                false,
                Timestamp::now(),
            )
            .unwrap();
        (world, id)
    }

    #[test]
    fn gateway_is_the_first_host_of_the_network() {
        let (world, id) = world_with_network();
        let json = world.network(id).unwrap().to_api(&world);
        assert_eq!(json["subnets"][0]["gateway"], "10.0.0.1");
        assert_eq!(json["subnets"][0]["type"], "cloud");
        assert_eq!(json["routes"][0]["gateway"], "10.0.1.2");
    }

    #[test]
    fn free_ips_skip_reserved_addresses() {
        let (world, id) = world_with_network();
        let network = world.network(id).unwrap();
        assert!(network.is_reserved("10.0.1.0".parse().unwrap()));
        assert!(network.is_reserved("10.0.1.255".parse().unwrap()));
        assert!(network.is_reserved("10.0.0.1".parse().unwrap()));
        assert_eq!(
            world.free_ip(network, "eu-central", None),
            Some("10.0.1.1".parse().unwrap())
        );
        assert_eq!(world.free_ip(network, "us-east", None), None);
    }

    #[test]
    fn rejects_bad_ranges() {
        let mut world = World::default();
        for (range, why) in [
            ("8.8.0.0/16", "public"),
            ("10.0.0.7/16", "host bits"),
            ("10.0.0.0", "no prefix"),
        ] {
            let err = world
                .create_network(
                    format!("n{why}"),
                    range,
                    vec![],
                    vec![],
                    Labels::new(),
                    false,
                    Timestamp::now(),
                )
                .unwrap_err();
            assert_eq!(err.code(), "invalid_input", "{why}");
        }
    }

    #[test]
    fn subnets_must_fit_and_not_overlap() {
        let (mut world, id) = world_with_network();
        let now = Timestamp::now();
        let spec = |range: &str| SubnetSpec {
            kind: "cloud".into(),
            ip_range: Some(range.into()),
            network_zone: "eu-central".into(),
        };
        assert_eq!(
            world
                .add_subnet(id, spec("10.1.0.0/24"), now)
                .unwrap_err()
                .code(),
            "invalid_input"
        );
        assert_eq!(
            world
                .add_subnet(id, spec("10.0.1.0/25"), now)
                .unwrap_err()
                .code(),
            "invalid_input"
        );
        world.add_subnet(id, spec("10.0.2.0/24"), now).unwrap();
        // The network is busy with that subnet until its action ends.
        assert_eq!(
            world
                .add_subnet(id, spec("10.0.3.0/24"), now)
                .unwrap_err()
                .code(),
            "conflict"
        );
        world.advance(now.plus(std::time::Duration::from_secs(60)));
        let auto = SubnetSpec {
            kind: "cloud".into(),
            ip_range: None,
            network_zone: "eu-central".into(),
        };
        world.add_subnet(id, auto, now).unwrap();
        let ranges: Vec<String> = world.networks[&id]
            .subnets
            .iter()
            .map(|s| s.ip_range.to_string())
            .collect();
        assert_eq!(ranges, vec!["10.0.1.0/24", "10.0.2.0/24", "10.0.0.0/24"]);
    }
}
