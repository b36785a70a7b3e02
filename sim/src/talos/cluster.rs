//! What the nodes of one cluster (same `cluster.id` and `cluster.secret`)
//! know of each other: which control plane's trustd signs a worker's
//! certificate, whether etcd exists, and who its members are.

use super::config::{ClusterIdentity, MachineConfig};
use super::node::{EtcdMember, NodeState};
use super::pki::CertificateAuthority;
use super::secret::Secret;
use crate::resources::servers::Server;
use crate::state::World;

/// The world's configured nodes, looked at once per step.
pub struct Clusters<'w> {
    nodes: Vec<Peer<'w>>,
}

struct Peer<'w> {
    state: &'w NodeState,
    config: Option<&'w MachineConfig>,
}

impl<'w> Clusters<'w> {
    pub fn of(world: &'w World) -> Self {
        let nodes = world
            .servers
            .values()
            .filter_map(|s| s.talos.as_ref())
            .map(|t| Peer {
                state: &t.node,
                config: t.node.config(),
            })
            .collect();
        Self { nodes }
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

    /// The OS CA that trustd on a running control plane signs with, for a
    /// worker presenting `token`. None when no such control plane is up or
    /// the token is not the cluster's.
    pub fn trustd(
        &self,
        cluster: &ClusterIdentity,
        token: &Secret,
    ) -> Option<&'w CertificateAuthority> {
        self.in_cluster(cluster)
            .find(|(state, config)| {
                config.is_control_plane()
                    && state.is_running()
                    && config.trustd_token == *token
                    && config.os_ca.key.is_some()
            })
            .map(|(_, config)| &config.os_ca)
    }

    /// Whether a running control plane is an etcd member to join.
    pub fn has_running_member(&self, cluster: &ClusterIdentity) -> bool {
        self.in_cluster(cluster)
            .any(|(state, _)| state.is_running() && state.disk.etcd.member.is_some())
    }

    /// Whether etcd was bootstrapped: some node founded it or is a member.
    pub fn is_bootstrapped(&self, cluster: &ClusterIdentity) -> bool {
        self.in_cluster(cluster)
            .any(|(state, _)| state.disk.etcd.founder || state.disk.etcd.member.is_some())
    }

    /// The members etcd lists: every node that joined (running or not) and
    /// the ones reset without leaving.
    pub fn members(&self, cluster: &ClusterIdentity) -> Vec<EtcdMember> {
        let mut members: Vec<EtcdMember> = self
            .in_cluster(cluster)
            .filter_map(|(state, _)| state.disk.etcd.member.clone())
            .collect();
        for peer in &self.nodes {
            if let Some(departed) = &peer.state.departed
                && departed.cluster == *cluster
                && !members.iter().any(|m| m.id == departed.member.id)
            {
                members.push(departed.member.clone());
            }
        }
        members.sort_by(|a, b| a.hostname.cmp(&b.hostname).then(a.id.cmp(&b.id)));
        members
    }
}

/// The name a node goes by: its config's hostname, else (as Hetzner's
/// metadata says) the server's name.
pub fn hostname(server: &Server, config: Option<&MachineConfig>) -> String {
    config
        .and_then(|c| c.hostname.clone())
        .unwrap_or_else(|| server.name.clone())
}
