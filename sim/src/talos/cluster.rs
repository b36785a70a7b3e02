//! What the nodes of one cluster (same `cluster.id` and `cluster.secret`)
//! know of each other: which control plane's trustd signs a worker's
//! certificate, whether etcd exists, and who its members are. Nodes of
//! one cluster may run more than one etcd cluster ("ring"): a Bootstrap
//! on a control plane with empty etcd data starts a new one there, as
//! Talos does, whatever the other control planes run.
//!
//! Workers find their control plane the way Talos does: through
//! `cluster.controlPlane.endpoint` only. Its host must be the private IP
//! of a running control plane in one of the worker's own networks
//! (networks may overlap; the sim resolves no names); trustd there
//! signs only for its own cluster's token, and kubelet registers only with
//! an API server that runs there. A load balancer's private IP leads to the
//! running control planes among its targets, for the ports it has a
//! service on (trustd 50001, the API server 6443).

use std::net::IpAddr;

use super::config::{ClusterIdentity, MachineConfig};
use super::node::{EtcdMember, GoneMember, NodeState};
use super::pki::CertificateAuthority;
use super::ports::{KUBE_API_PORT, TRUSTD_PORT};
use super::secret::Secret;
use crate::ids::Id;
use crate::resources::servers::Server;
use crate::state::World;

/// The world's configured nodes, looked at once per step.
pub struct Clusters<'w> {
    nodes: Vec<Peer<'w>>,
    load_balancers: Vec<Front>,
    /// Members of deleted servers that etcd still lists.
    gone: &'w [GoneMember],
}

/// A private address: the network, and the IP in it.
type Address = (Id, IpAddr);

/// A load balancer on a private network: its address, the ports it serves
/// and its targets' private addresses.
struct Front {
    address: Address,
    ports: Vec<u16>,
    targets: Vec<Address>,
}

struct Peer<'w> {
    state: &'w NodeState,
    config: Option<&'w MachineConfig>,
    addresses: Vec<Address>,
}

impl<'w> Clusters<'w> {
    pub fn of(world: &'w World) -> Self {
        let nodes = world
            .servers
            .values()
            .filter_map(|s| Some((s, s.talos.as_ref()?)))
            .map(|(s, t)| Peer {
                state: &t.node,
                config: t.node.config(),
                addresses: addresses(s),
            })
            .collect();
        let load_balancers = world
            .load_balancers
            .values()
            .flat_map(|lb| {
                let targets: Vec<Address> = lb
                    .targets
                    .iter()
                    .filter(|t| t.use_private_ip)
                    .flat_map(|t| world.target_servers(lb, t))
                    .filter_map(|id| world.servers.get(&id))
                    .flat_map(addresses)
                    .collect();
                let ports: Vec<u16> = lb.services.iter().map(|s| s.listen_port).collect();
                lb.private_net.iter().map(move |p| Front {
                    address: (p.network, IpAddr::V4(p.ip)),
                    ports: ports.clone(),
                    targets: targets.clone(),
                })
            })
            .collect();
        Self {
            nodes,
            load_balancers,
            gone: &world.etcd_gone,
        }
    }

    fn in_cluster<'a>(
        &'a self,
        cluster: &'a ClusterIdentity,
    ) -> impl Iterator<Item = (&'w NodeState, &'w MachineConfig)> + 'a {
        self.nodes.iter().filter_map(move |p| match p.config {
            Some(config) if config.cluster == *cluster => Some((p.state, config)),
            _ => None,
        })
    }

    /// The running control plane the endpoint's host is an address of in
    /// one of `from`'s networks, and its config; None when no such node
    /// answers there.
    fn at_endpoint(
        &self,
        endpoint: &str,
        port: u16,
        from: &Server,
    ) -> Option<(&'w NodeState, &'w MachineConfig)> {
        let ip: IpAddr = endpoint_host(endpoint)?.parse().ok()?;
        let reachable: Vec<Address> = from.private_net.iter().map(|p| (p.network, ip)).collect();
        let hosts = match self
            .load_balancers
            .iter()
            .find(|lb| reachable.contains(&lb.address))
        {
            Some(lb) if lb.ports.contains(&port) => lb.targets.clone(),
            Some(_) => Vec::new(),
            None => reachable,
        };
        self.nodes.iter().find_map(|p| match p.config {
            Some(config)
                if config.is_control_plane()
                    && p.state.is_running()
                    && p.addresses.iter().any(|a| hosts.contains(a)) =>
            {
                Some((p.state, config))
            }
            _ => None,
        })
    }

    /// The OS CA trustd at the worker's control-plane endpoint signs with:
    /// None when nothing answers there, or trustd there turns the token
    /// down (another cluster's control plane).
    pub fn trustd_at(
        &self,
        endpoint: &str,
        token: &Secret,
        from: &Server,
    ) -> Result<&'w CertificateAuthority, String> {
        let (_, config) = self
            .at_endpoint(endpoint, TRUSTD_PORT, from)
            .ok_or_else(|| {
                format!("no control plane answers at the control plane endpoint {endpoint}")
            })?;
        if config.trustd_token != *token || config.os_ca.key.is_none() {
            return Err(format!(
                "trustd at the control plane endpoint {endpoint} refuses the node's token: \
                 it serves another cluster"
            ));
        }
        Ok(&config.os_ca)
    }

    /// Whether the Kubernetes API server at the endpoint runs and belongs
    /// to `cluster`; Err says why kubelet cannot register.
    pub fn api_server_at(
        &self,
        endpoint: &str,
        cluster: &ClusterIdentity,
        from: &Server,
    ) -> Result<(), String> {
        let (state, config) = self
            .at_endpoint(endpoint, KUBE_API_PORT, from)
            .ok_or_else(|| format!("no Kubernetes API server answers at {endpoint}"))?;
        if config.cluster != *cluster {
            return Err(format!(
                "the API server at {endpoint} belongs to another cluster and refuses the node's credentials"
            ));
        }
        if state.disk.etcd.member.is_none() {
            return Err(format!("the API server at {endpoint} waits for etcd"));
        }
        Ok(())
    }

    /// The etcd cluster a new control plane joins: that of a running
    /// member (of the one with the most members, should the secrets run
    /// two). None when no member runs.
    pub fn ring_to_join(&self, cluster: &ClusterIdentity) -> Option<u64> {
        let mut rings: Vec<u64> = self
            .in_cluster(cluster)
            .filter(|(state, _)| state.is_running())
            .filter_map(|(state, _)| state.disk.etcd.member.as_ref().map(|m| m.ring))
            .collect();
        rings.sort_unstable();
        rings.dedup();
        rings
            .into_iter()
            .max_by_key(|ring| (self.members(cluster, *ring).len(), std::cmp::Reverse(*ring)))
    }

    /// Whether any node of the cluster has etcd data (founded or joined
    /// an etcd): the cluster was bootstrapped.
    pub fn has_etcd(&self, cluster: &ClusterIdentity) -> bool {
        self.in_cluster(cluster)
            .any(|(state, _)| !state.disk.etcd.is_empty())
    }

    /// The members etcd cluster `ring` lists: every node that joined
    /// (running or not), the ones reset without leaving and those of
    /// deleted servers.
    pub fn members(&self, cluster: &ClusterIdentity, ring: u64) -> Vec<EtcdMember> {
        let mut members: Vec<EtcdMember> = self
            .in_cluster(cluster)
            .filter_map(|(state, _)| state.disk.etcd.member.clone())
            .filter(|m| m.ring == ring)
            .collect();
        for peer in &self.nodes {
            if let Some(departed) = &peer.state.departed
                && departed.cluster == *cluster
                && departed.member.ring == ring
                && !members.iter().any(|m| m.id == departed.member.id)
            {
                members.push(departed.member.clone());
            }
        }
        for gone in self
            .gone
            .iter()
            .filter(|g| g.cluster == cluster.id && g.member.ring == ring)
        {
            if !members.iter().any(|m| m.id == gone.member.id) {
                members.push(gone.member.clone());
            }
        }
        members.sort_by(|a, b| a.hostname.cmp(&b.hostname).then(a.id.cmp(&b.id)));
        members
    }

    /// Every etcd cluster the secrets' nodes hold data of (as members, or
    /// reset without leaving). One whose members' servers are all gone has
    /// nobody left to list them: it is no more.
    pub fn rings(&self, cluster: &ClusterIdentity) -> Vec<u64> {
        let mut rings: Vec<u64> = self
            .in_cluster(cluster)
            .filter_map(|(state, _)| state.disk.etcd.member.as_ref().map(|m| m.ring))
            .chain(
                self.nodes
                    .iter()
                    .filter_map(|p| p.state.departed.as_ref())
                    .filter(|d| d.cluster == *cluster)
                    .map(|d| d.member.ring),
            )
            .collect();
        rings.sort_unstable();
        rings.dedup();
        rings
    }
}

/// The host of an `https://host[:port][/…]` endpoint.
pub fn endpoint_host(endpoint: &str) -> Option<&str> {
    let authority = endpoint.strip_prefix("https://")?.split('/').next()?;
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => host,
        _ => authority,
    };
    Some(host.trim_start_matches('[').trim_end_matches(']'))
}

/// The server's private addresses, by network.
fn addresses(server: &Server) -> Vec<Address> {
    server
        .private_net
        .iter()
        .flat_map(|p| {
            std::iter::once(p.ip)
                .chain(p.alias_ips.iter().copied())
                .map(move |ip| (p.network, IpAddr::V4(ip)))
        })
        .collect()
}

/// The server's private IPs, as the node holds them.
pub fn private_ips(server: &Server) -> Vec<IpAddr> {
    server
        .private_net
        .iter()
        .flat_map(|p| std::iter::once(p.ip).chain(p.alias_ips.iter().copied()))
        .map(IpAddr::V4)
        .collect()
}

/// The name a node goes by: its config's hostname, else the server's name.
/// Talos' own choices (`auto: stable`, or none) rank below the hostname of
/// the platform layer, which on Hetzner is the server name from the
/// metadata service (the same service Talos read its user data from).
pub fn hostname(server: &Server, config: Option<&MachineConfig>) -> String {
    config
        .and_then(|c| c.hostname.clone())
        .unwrap_or_else(|| server.name.clone())
}
