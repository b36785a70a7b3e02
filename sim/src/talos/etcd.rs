//! Each cluster's etcd membership, as etcd itself keeps it: the members
//! are the control planes that joined, and stay members until they leave
//! (a graceful reset) or are removed. A node reset without leaving, or a
//! server deleted while its node was a member, stays listed: etcd cannot
//! tell a dead member from a slow one, and counts it for the quorum. A
//! new control plane with the same hostname removes it as it joins, as
//! Talos' etcd service does before adding itself (it would conflict).
//!
//! The members come from the nodes' disks, and those of deleted servers
//! from the world (`World::etcd_gone`, saved with it, filled as a server
//! is removed). `watch`, run as the nodes settle and on the supervisor's
//! tick when `changed` says so, emits [`SimEvent::EtcdMembers`] whenever a
//! cluster's members, or which of them run, change (a real control
//! plane's etcd follows at once). `membership` is what `/_sim/state` shows under `etcd`
//! and what the API servers' quorum check counts.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde_json::{Value, json};

use super::cluster::Clusters;
use super::config::{ClusterIdentity, MachineConfig};
use super::node::{EtcdMember, MemberView, NodeState};
use super::services;
use crate::events::SimEvent;
use crate::resources::servers::Server;
use crate::state::World;

/// Whether the node's etcd runs, by the emulation's own word on its etcd
/// service (Running and healthy, which takes membership and egress;
/// ServiceList adds the real etcd's word on top, `calls::etcd_health`,
/// which must not feed back into this). Otherwise why not.
pub(crate) fn etcd_ready(
    world: &World,
    server: &Server,
    node: &NodeState,
    config: &MachineConfig,
) -> Result<(), String> {
    let etcd = services::of(world, server, node, config)
        .into_iter()
        .find(|s| s.id == "etcd")
        .ok_or_else(|| "etcd does not run on this node".to_string())?;
    if etcd.state == "Running" && etcd.healthy {
        Ok(())
    } else {
        Err(format!("etcd is {}: {}", etcd.state, etcd.message))
    }
}

/// A node of `cluster` joined as `member`: listed members of the same
/// hostname (another id) are removed first, as Talos does.
pub fn joined(world: &mut World, cluster: &ClusterIdentity, member: &EtcdMember) {
    world.etcd_gone.retain(|g| {
        !(g.cluster == cluster.id
            && g.member.ring == member.ring
            && g.member.hostname == member.hostname
            && g.member.id != member.id)
    });
}

/// The server whose node is (or was, reset without leaving) member `id`.
fn server_of(world: &World, id: u64) -> Option<&Server> {
    world.servers.values().find(|server| {
        server.talos.as_ref().is_some_and(|t| {
            t.node.disk.etcd.member.as_ref().map(|m| m.id) == Some(id)
                || t.node.departed.as_ref().map(|d| d.member.id) == Some(id)
        })
    })
}

/// The address member `id` of `cluster` advertises to its peers and
/// clients (the node's address in the etcd subnet), while its node is
/// configured for `cluster`.
pub fn advertised(world: &World, cluster: &ClusterIdentity, id: u64) -> Option<IpAddr> {
    let server = server_of(world, id)?;
    let config = server.talos.as_ref()?.node.config()?;
    (config.cluster == *cluster)
        .then(|| {
            config
                .subnets
                .etcd_address(&super::cluster::private_ips(server))
        })
        .flatten()
}

/// The members etcd cluster `ring` of `cluster` lists, with whether each
/// runs.
pub fn members(world: &World, cluster: &ClusterIdentity, ring: u64) -> Vec<MemberView> {
    Clusters::of(world)
        .members(cluster, ring)
        .into_iter()
        .map(|m| MemberView {
            up: server_of(world, m.id).is_some_and(|s| runs(world, s, cluster, m.id)),
            id: m.id,
            hostname: m.hostname,
            ring: m.ring,
        })
        .collect()
}

/// Whether more than half the members etcd cluster `ring` lists run; Err
/// says how many do.
pub fn quorum(world: &World, cluster: &ClusterIdentity, ring: u64) -> Result<(), String> {
    let members = members(world, cluster, ring);
    let up = members.iter().filter(|m| m.up).count();
    if is_quorum(up, members.len()) {
        Ok(())
    } else {
        Err(format!(
            "etcd has no quorum: {up} of {} members are up",
            members.len()
        ))
    }
}

/// Whether `up` voting members of `of` are a quorum: more than half.
pub fn is_quorum(up: usize, of: usize) -> bool {
    up * 2 > of
}

/// Whether `server`'s node runs etcd as member `id` of `cluster`.
pub(crate) fn runs(world: &World, server: &Server, cluster: &ClusterIdentity, id: u64) -> bool {
    let Some(talos) = server.talos.as_ref() else {
        return false;
    };
    let Some(config) = talos.node.config() else {
        return false;
    };
    config.cluster == *cluster
        && talos.node.is_running()
        && talos.node.disk.etcd.member.as_ref().map(|m| m.id) == Some(id)
        && etcd_ready(world, server, &talos.node, config).is_ok()
}

/// Every cluster's members, by `cluster.id` (of every etcd cluster its
/// nodes hold data of: each member says which); a cluster with no node
/// left lists its gone members.
pub fn membership(world: &World) -> Membership {
    let mut clusters: BTreeMap<String, ClusterIdentity> = BTreeMap::new();
    for server in world.servers.values() {
        if let Some(config) = server.talos.as_ref().and_then(|t| t.node.config()) {
            clusters
                .entry(config.cluster.id.clone())
                .or_insert_with(|| config.cluster.clone());
        }
    }
    let mut out: BTreeMap<String, Vec<MemberView>> = clusters
        .iter()
        .map(|(id, cluster)| {
            let all: Vec<MemberView> = Clusters::of(world)
                .rings(cluster)
                .into_iter()
                .flat_map(|ring| members(world, cluster, ring))
                .collect();
            (id.clone(), all)
        })
        .filter(|(_, members)| !members.is_empty())
        .collect();
    for gone in &world.etcd_gone {
        if clusters.contains_key(&gone.cluster) {
            continue; // listed with its etcd, if that still runs anywhere
        }
        let list = out.entry(gone.cluster.clone()).or_default();
        if !list.iter().any(|m| m.id == gone.member.id) {
            list.push(MemberView {
                id: gone.member.id,
                hostname: gone.member.hostname.clone(),
                up: false,
                ring: gone.member.ring,
            });
        }
    }
    out
}

/// `/_sim/state`'s `etcd`: per cluster id, its members.
pub fn to_json(world: &World) -> Value {
    json!(membership(world))
}

/// Whether a cluster's members, or which of them run, changed since
/// [`watch`] last looked (which then says so); the supervisor asks every
/// tick, without touching the world unless so.
pub fn changed(world: &World) -> bool {
    let (now, changed) = since_seen(world);
    !changed.is_empty() || now.len() != world.etcd_seen.len()
}

/// Emits an event for each cluster whose members changed since the last
/// look.
pub fn watch(world: &mut World) {
    let (now, changed) = since_seen(world);
    world.etcd_seen = now;
    for (cluster, members) in changed {
        world.emit(SimEvent::EtcdMembers { cluster, members });
    }
}

/// Every cluster's members now, and the summary of each whose members
/// changed since [`watch`] last looked.
fn since_seen(world: &World) -> (Membership, Vec<(String, Summary)>) {
    let now = membership(world);
    let changed = now
        .iter()
        .filter(|(cluster, members)| {
            world.etcd_seen.get(*cluster).map(|seen| summary(seen)) != Some(summary(members))
        })
        .map(|(cluster, members)| (cluster.clone(), summary(members)))
        .collect();
    (now, changed)
}

/// (hostname, runs) per member, by hostname; a member of a second etcd
/// cluster shows its ring after the hostname.
type Summary = Vec<(String, bool)>;

/// Each cluster's members, by `cluster.id`.
pub type Membership = BTreeMap<String, Vec<MemberView>>;

fn summary(members: &[MemberView]) -> Summary {
    let first = members.iter().map(|m| m.ring).min();
    let mut out: Vec<(String, bool)> = members
        .iter()
        .map(|m| match first {
            Some(ring) if m.ring != ring => (format!("{}@{:x}", m.hostname, m.ring), m.up),
            _ => (m.hostname.clone(), m.up),
        })
        .collect();
    out.sort();
    out
}
