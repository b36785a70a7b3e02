//! A server reinstalled behind its owner's back (`{"talos":
//! "reinstalled", …}`): its disk wiped and Talos rebooted, either waiting
//! in maintenance mode or configured by another cluster's secrets. What
//! a client that trusts only its cluster's CA must notice, and never send
//! a config to. (A server whose user data holds a config reads it again at
//! that boot, as Talos does: it comes back configured, with empty etcd.)

use super::config;
use super::faults::{Reinstall, ServerRef};
use super::lifecycle::{Restart, back_at, running_version};
use super::node::DepartedMember;
use super::sample::{SampleCluster, SampleNode};
use crate::clock::Timestamp;
use crate::state::World;

/// Reinstalls the servers `server` names; Err when none does, or another
/// cluster's config cannot be made.
pub fn reinstall(
    world: &mut World,
    server: &ServerRef,
    with: Reinstall,
    now: Timestamp,
) -> Result<(), String> {
    let ids: Vec<_> = world
        .servers
        .values()
        .filter(|s| server.matches(s) && s.talos.is_some())
        .map(|s| s.id)
        .collect();
    if ids.is_empty() {
        return Err(format!("no Talos node is {server:?}"));
    }
    for id in ids {
        let server = &world.servers[&id];
        let talos = server.talos.as_ref().expect("filtered on Talos nodes");
        let control_plane = talos.node.config().is_none_or(|c| c.is_control_plane());
        let gateway = server
            .private_net
            .first()
            .and_then(|p| world.networks.get(&p.network))
            .map(|n| n.gateway().to_string())
            .unwrap_or_else(|| "10.0.0.1".into());
        let foreign = match with {
            Reinstall::Maintenance => None,
            Reinstall::ForeignCa => {
                let other = SampleCluster::generate("someone-else", "https://10.255.255.1:6443")
                    .map_err(|e| e.to_string())?;
                let text =
                    other.machine_config(&SampleNode::new(control_plane, &talos.version, &gateway));
                Some(
                    config::parse(&text, running_version(talos).as_ref())
                        .map_err(|e| e.to_string())?,
                )
            }
        };
        let back = back_at(world, server, Restart::Reboot, now);
        let Some(talos) = world.servers.get_mut(&id).and_then(|s| s.talos.as_mut()) else {
            continue;
        };
        let node = &mut talos.node;
        // Wiped without leaving etcd: the other members keep listing it.
        node.departed = match (&node.disk.etcd.member, node.config()) {
            (Some(member), Some(config)) => Some(DepartedMember {
                cluster: config.cluster.clone(),
                member: member.clone(),
            }),
            _ => node.departed.take(),
        };
        node.wipe();
        node.disk.config = foreign;
        node.restart(back);
    }
    Ok(())
}
