//! What ServiceList reports: apid, kubelet and (on control planes) etcd,
//! healthy only when the node can pull their images, kubelet has a node
//! IP (from `validSubnets`, outside the pod and service ranges) and, on a
//! worker, an API server at the control-plane endpoint to register with
//! (once registered, kubelet keeps running while that API server is away),
//! and etcd has an address to advertise (from `advertisedSubnets`) and
//! has formed. A service that waits says why, as Talos' service events do;
//! etcd is Failed after a recovery that failed (`etcd_recover`). This is
//! the emulation's own word; where a real etcd runs the ring, ServiceList
//! takes its word on the node's own member too (`calls::etcd_health`).

use super::cluster::{self, Clusters};
use super::config::MachineConfig;
use super::network::{self, NoEgress};
use super::node::NodeState;
use crate::resources::servers::{Server, ServerStatus};
use crate::state::World;
use std::net::Ipv4Addr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStatus {
    pub id: &'static str,
    pub state: &'static str,
    pub healthy: bool,
    pub message: String,
}

impl ServiceStatus {
    fn running(id: &'static str) -> Self {
        Self {
            id,
            state: "Running",
            healthy: true,
            message: "Health check successful".into(),
        }
    }

    fn preparing(id: &'static str, message: String) -> Self {
        Self {
            id,
            state: "Preparing",
            healthy: false,
            message,
        }
    }
}

/// The gateways of the networks the server is attached to.
pub fn gateways(world: &World, server: &Server) -> Vec<Ipv4Addr> {
    server
        .private_net
        .iter()
        .filter_map(|p| world.networks.get(&p.network))
        .map(|n| n.gateway())
        .collect()
}

/// Whether the node's traffic gets out, and through which gateway: the
/// node routes it to its network's gateway, and the network routes
/// 0.0.0.0/0 on to a NAT gateway that runs.
pub fn egress(
    world: &World,
    server: &Server,
    config: &MachineConfig,
) -> Result<Ipv4Addr, NoEgress> {
    let via = network::egress(&config.routes, &gateways(world, server))?;
    let Some(network) = server
        .private_net
        .iter()
        .filter_map(|p| world.networks.get(&p.network))
        .find(|n| n.gateway() == via)
    else {
        return Ok(via);
    };
    let Some(route) = network
        .routes
        .iter()
        .find(|r| r.destination.prefix_len() == 0)
    else {
        return Err(NoEgress::NoNetworkRoute {
            network: network.name.clone(),
            gateway: via,
        });
    };
    let nat = route.gateway;
    let forwards = world.servers.values().any(|s| {
        s.status == ServerStatus::Running
            && s.private_net
                .iter()
                .any(|p| p.network == network.id && (p.ip == nat || p.alias_ips.contains(&nat)))
    });
    if forwards {
        Ok(via)
    } else {
        Err(NoEgress::NatGatewayDown {
            network: network.name.clone(),
            nat,
        })
    }
}

/// The services of a configured node.
pub fn of(
    world: &World,
    server: &Server,
    node: &NodeState,
    config: &MachineConfig,
) -> Vec<ServiceStatus> {
    of_node(world, server, node, config, &Clusters::of(world))
}

fn waiting(id: &'static str, message: String) -> ServiceStatus {
    ServiceStatus {
        id,
        state: "Waiting",
        healthy: false,
        message,
    }
}

/// The services of a configured node, given what its cluster's nodes know.
pub fn of_node(
    world: &World,
    server: &Server,
    node: &NodeState,
    config: &MachineConfig,
    clusters: &Clusters,
) -> Vec<ServiceStatus> {
    let egress = egress(world, server, config);
    let addresses = cluster::private_ips(server);
    let pulls = |id: &'static str| match &egress {
        Ok(_) => ServiceStatus::running(id),
        Err(e) => ServiceStatus::preparing(id, format!("failed to pull the {id} image: {e}")),
    };
    let kubelet = if config.subnets.kubelet_node_ip(&addresses).is_none() {
        waiting(
            "kubelet",
            format!(
                "no suitable node IP found, please make sure .machine.kubelet.nodeIP filters and \
                 pod/service subnets are set up correctly (addresses {}, validSubnets {}, pod \
                 subnets {}, service subnets {})",
                list(&addresses),
                config.subnets.kubelet.describe(),
                list(&config.subnets.pods),
                list(&config.subnets.services),
            ),
        )
    } else if egress.is_err() || config.is_control_plane() || node.run.kubelet_registered {
        pulls("kubelet")
    } else {
        match clusters.api_server_at(&config.endpoint, &config.cluster, server) {
            Ok(()) => ServiceStatus::running("kubelet"),
            Err(why) => ServiceStatus {
                id: "kubelet",
                state: "Running",
                healthy: false,
                message: format!("unable to register node with API server: {why}"),
            },
        }
    };
    let mut services = vec![ServiceStatus::running("apid"), kubelet];
    if config.is_control_plane() {
        let advertised = config.subnets.etcd_address(&addresses);
        let failed = node
            .disk
            .etcd
            .spoiled
            .as_ref()
            .or(node.run.etcd_failed.as_ref());
        let etcd = match (&egress, &node.disk.etcd.member, advertised) {
            _ if failed.is_some() => ServiceStatus {
                id: "etcd",
                state: "Failed",
                healthy: false,
                message: failed.cloned().unwrap_or_default(),
            },
            (Err(_), _, _) | (Ok(_), Some(_), _) => pulls("etcd"),
            (Ok(_), None, None) => waiting(
                "etcd",
                format!(
                    "Waiting for etcd spec: no address of the node ({}) is in \
                     cluster.etcd.advertisedSubnets {}",
                    list(&addresses),
                    config.subnets.etcd_advertised.describe()
                ),
            ),
            (Ok(_), None, Some(_)) => ServiceStatus::preparing(
                "etcd",
                "waiting for bootstrap or a running member to join".into(),
            ),
        };
        services.push(etcd);
    }
    services
}

fn list<T: ToString>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(", "))
}
