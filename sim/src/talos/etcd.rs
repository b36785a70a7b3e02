//! Each cluster's etcd membership, as etcd itself keeps it: the members
//! are the control planes that joined, and stay members until they leave
//! (a graceful reset) or are removed. A node reset without leaving, or a
//! server deleted while its node was a member, stays listed: etcd cannot
//! tell a dead member from a slow one, and counts it for the quorum. A
//! new control plane with the same hostname removes it as it joins, as
//! Talos' etcd service does before adding itself (it would conflict).
//!
//! Deleted servers' members are kept in the world (`World::etcd_gone`,
//! saved with it); the rest comes from the nodes' disks. `membership` is
//! what `/_sim/state` shows under `etcd` and what the API servers' quorum
//! check counts; `watch` emits [`SimEvent::EtcdMembers`] whenever a
//! cluster's members, or which of them run, change.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::cluster::Clusters;
use super::config::ClusterIdentity;
use super::kube_api;
use super::node::EtcdMember;
use crate::events::SimEvent;
use crate::resources::servers::Server;
use crate::state::World;

/// The member of a server deleted while it was one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoneMember {
    /// The cluster's `cluster.id`.
    pub cluster: String,
    pub id: u64,
    pub hostname: String,
}

impl GoneMember {
    pub fn member(&self) -> EtcdMember {
        EtcdMember {
            id: self.id,
            hostname: self.hostname.clone(),
        }
    }
}

/// One member as a cluster's etcd lists it, and whether it runs (its node
/// runs with etcd Running and healthy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberView {
    pub id: u64,
    pub hostname: String,
    pub up: bool,
}

/// `server` is being deleted: a member its node was stays listed.
/// So does the member of a node reset without leaving etcd.
pub fn server_deleted(world: &mut World, server: &Server) {
    let Some(talos) = server.talos.as_ref() else {
        return;
    };
    let member = match (&talos.node.disk.etcd.member, talos.node.config()) {
        (Some(member), Some(config)) => Some((config.cluster.id.clone(), member.clone())),
        _ => talos
            .node
            .departed
            .as_ref()
            .map(|d| (d.cluster.id.clone(), d.member.clone())),
    };
    if let Some((cluster, member)) = member {
        world.etcd_gone.push(GoneMember {
            cluster,
            id: member.id,
            hostname: member.hostname,
        });
    }
}

/// A node of `cluster` joined as `member`: listed members of the same
/// hostname (another id) are removed first, as Talos does.
pub fn joined(world: &mut World, cluster: &ClusterIdentity, member: &EtcdMember) {
    world.etcd_gone.retain(|g| {
        !(g.cluster == cluster.id && g.hostname == member.hostname && g.id != member.id)
    });
}

/// The members `cluster`'s etcd lists, with whether each runs.
pub fn members(world: &World, cluster: &ClusterIdentity) -> Vec<MemberView> {
    Clusters::of(world)
        .members(cluster)
        .into_iter()
        .map(|m| MemberView {
            up: runs(world, cluster, m.id),
            id: m.id,
            hostname: m.hostname,
        })
        .collect()
}

/// Whether the node that is member `id` runs etcd.
fn runs(world: &World, cluster: &ClusterIdentity, id: u64) -> bool {
    world.servers.values().any(|server| {
        let Some(talos) = server.talos.as_ref() else {
            return false;
        };
        let Some(config) = talos.node.config() else {
            return false;
        };
        config.cluster == *cluster
            && talos.node.is_running()
            && talos.node.disk.etcd.member.as_ref().map(|m| m.id) == Some(id)
            && kube_api::etcd_ready(world, server, &talos.node, config).is_ok()
    })
}

/// Every cluster's members, by `cluster.id`.
pub fn membership(world: &World) -> BTreeMap<String, Vec<MemberView>> {
    let mut clusters: BTreeMap<String, ClusterIdentity> = BTreeMap::new();
    for server in world.servers.values() {
        if let Some(config) = server.talos.as_ref().and_then(|t| t.node.config()) {
            clusters
                .entry(config.cluster.id.clone())
                .or_insert_with(|| config.cluster.clone());
        }
    }
    let mut out: BTreeMap<String, Vec<MemberView>> = clusters
        .into_iter()
        .map(|(id, cluster)| (id, members(world, &cluster)))
        .filter(|(_, members)| !members.is_empty())
        .collect();
    // A cluster whose every node is gone still lists its gone members.
    for gone in &world.etcd_gone {
        if !out.contains_key(&gone.cluster) {
            out.entry(gone.cluster.clone()).or_default();
        }
    }
    for (cluster, list) in &mut out {
        for gone in world.etcd_gone.iter().filter(|g| &g.cluster == cluster) {
            if !list.iter().any(|m| m.id == gone.id) {
                list.push(MemberView {
                    id: gone.id,
                    hostname: gone.hostname.clone(),
                    up: false,
                });
            }
        }
    }
    out
}

/// `/_sim/state`'s `etcd`: per cluster id, its members.
pub fn to_json(world: &World) -> Value {
    json!(membership(world))
}

/// Emits an event for each cluster whose members changed since the last.
pub fn watch(world: &mut World) {
    let now = membership(world);
    let changed: Vec<(String, Vec<MemberView>)> = now
        .iter()
        .filter(|(cluster, members)| world.etcd_seen.get(*cluster) != Some(*members))
        .map(|(c, m)| (c.clone(), m.clone()))
        .collect();
    world.etcd_seen = now;
    for (cluster, members) in changed {
        world.emit(SimEvent::EtcdMembers {
            cluster,
            members: members.into_iter().map(|m| (m.hostname, m.up)).collect(),
        });
    }
}
