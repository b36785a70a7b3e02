//! Time passing for the emulated nodes: Talos starts when its server boots
//! from disk and stops when it powers off; boots finish; a node comes up
//! with its installed config, the config in its user data, or none
//! (maintenance mode); workers get apid's certificate from trustd; control
//! planes with egress found or join etcd; trial configs roll back. Each step
//! also refreshes the summary every node shows.
//!
//! Like actions, this runs when someone looks: the apid supervisor every
//! tick, and every Talos API call before it answers.

use super::cluster::{self, Clusters};
use super::config;
use super::faults;
use super::node::{ApidState, EtcdMember, Phase, PhaseName, Summary};
use super::services;
use super::user_data;
use super::version::TalosVersion;
use crate::clock::Timestamp;
use crate::events::SimEvent;
use crate::ids::Id;
use crate::resources::servers::{BootTarget, Server, ServerStatus, TalosNode};
use crate::state::World;

/// What a node does when it goes down and comes back; each has its
/// duration (`--duration talos_install=30s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Power on, or a reset or reboot by Hetzner.
    Boot,
    /// Writing the applied config to disk after maintenance mode.
    Install,
    Reboot,
    Upgrade,
}

impl Restart {
    fn command(self) -> &'static str {
        match self {
            Self::Boot => "talos_boot",
            Self::Install => "talos_install",
            Self::Reboot => "talos_reboot",
            Self::Upgrade => "talos_upgrade",
        }
    }
}

/// When a node restarting now is up again, slow-boot faults included.
pub fn back_at(world: &World, server: &Server, restart: Restart, now: Timestamp) -> Timestamp {
    let delay = world
        .config
        .durations
        .for_command(restart.command())
        .saturating_add(faults::boot_delay(&world.config.talos_faults, server));
    now.plus(delay)
}

/// The nodes whose state changes by `now`, as they will be.
pub fn plan(world: &World, now: Timestamp) -> Vec<(Id, TalosNode)> {
    let clusters = Clusters::of(world);
    world
        .servers
        .values()
        .filter_map(|server| {
            let current = server.talos.as_ref()?;
            let mut next = current.clone();
            advance(&mut next, server, world, &clusters, now);
            (next != *current).then_some((server.id, next))
        })
        .collect()
}

pub fn apply(world: &mut World, updates: Vec<(Id, TalosNode)>, now: Timestamp) {
    let at_ms = now.millis();
    for (id, node) in updates {
        let Some(server) = world.servers.get_mut(&id) else {
            continue;
        };
        let was = server.talos.as_ref().map(|t| &t.node.summary);
        let now = &node.node.summary;
        let moved = was
            .is_none_or(|w| (w.phase, w.healthy, w.starts) != (now.phase, now.healthy, now.starts));
        let event = moved.then(|| SimEvent::TalosNode {
            server: id,
            name: server.name.clone(),
            phase: now.phase,
            healthy: now.healthy,
            starts: now.starts,
            at_ms,
        });
        let joined = node
            .node
            .disk
            .etcd
            .member
            .clone()
            .zip(node.node.config().map(|c| c.cluster.clone()));
        server.talos = Some(node);
        if let Some((member, cluster)) = joined {
            super::etcd::joined(world, &cluster, &member);
        }
        if let Some(event) = event {
            world.emit(event);
        }
    }
}

/// Brings every node up to `now`.
pub fn settle(world: &mut World, now: Timestamp) {
    let updates = plan(world, now);
    apply(world, updates, now);
    super::etcd::watch(world);
}

fn advance(
    talos: &mut TalosNode,
    server: &Server,
    world: &World,
    clusters: &Clusters,
    now: Timestamp,
) {
    let powered = server.status == ServerStatus::Running && server.boot == Some(BootTarget::Disk);
    if !powered {
        if talos.node.phase != Phase::Off {
            talos.node.power_off();
        }
    } else if talos.node.run.boot_seen != Some(talos.boots) || talos.node.phase == Phase::Off {
        talos.node.run.boot_seen = Some(talos.boots);
        talos
            .node
            .restart(back_at(world, server, Restart::Boot, now));
    }
    if let Phase::Booting { until } = talos.node.phase
        && now >= until
    {
        come_up(talos, server);
    }
    if talos.node.is_running() {
        run(talos, server, world, clusters, now);
    }
    talos.node.summary = summarize(talos, server, world, clusters);
}

/// The release running on the node, if its label names one.
pub fn running_version(talos: &TalosNode) -> Option<TalosVersion> {
    talos.version.parse().ok()
}

fn come_up(talos: &mut TalosNode, server: &Server) {
    if let Some(version) = talos.node.disk.next_version.take() {
        talos.version = version.to_string();
    }
    let version = running_version(talos);
    let disk = &mut talos.node.disk;
    if let Some(staged) = disk.staged.take() {
        disk.config = Some(staged);
    }
    // On Hetzner, Talos reads its config from user data when it has none.
    if disk.config.is_none()
        && let Some(text) = server
            .user_data
            .as_deref()
            .and_then(user_data::machine_config)
    {
        match config::parse(&text, version.as_ref()) {
            Ok(config) => disk.config = Some(config),
            Err(e) => {
                talos.node.phase = Phase::Halted {
                    reason: format!("the machine config in user data is invalid: {e}"),
                };
                return;
            }
        }
    }
    talos.node.phase = Phase::Running;
    talos.node.run.apid_issuer = talos
        .node
        .config()
        .filter(|c| c.is_control_plane())
        .map(|c| c.os_ca.clone());
}

fn run(talos: &mut TalosNode, server: &Server, world: &World, clusters: &Clusters, now: Timestamp) {
    let node = &mut talos.node;
    if let Some(trial) = &node.run.trial
        && now >= trial.until
    {
        node.disk.config = Some((*trial.previous).clone());
        node.run.trial = None;
    }
    let Some(config) = node.disk.config.clone() else {
        return;
    };
    if !config.is_control_plane() {
        if node.run.apid_issuer.is_none() {
            node.run.apid_issuer = clusters
                .trustd_at(&config.endpoint, &config.trustd_token, server)
                .ok()
                .cloned();
        }
        if node.run.apid_issuer.is_some()
            && clusters
                .api_server_at(&config.endpoint, &config.cluster, server)
                .is_ok()
        {
            node.run.kubelet_registered = true;
        }
        return;
    }
    let since = *node.run.configured_since.get_or_insert(now);
    if node.disk.etcd.member.is_some() {
        return;
    }
    // A founder starts a new etcd cluster (a recovering one, that its
    // Bootstrap chose). Any other control plane joins through a running
    // member, some time after it came up configured, and only while that
    // etcd has a quorum (etcd refuses to add a member otherwise). A failed
    // etcd service joins nothing.
    let recovered = node.disk.etcd.recovery.as_ref().map(|r| r.ring);
    let ring = if node.run.etcd_failed.is_some() || node.disk.etcd.spoiled.is_some() {
        None
    } else if node.disk.etcd.founder {
        Some(recovered.unwrap_or_else(|| fastrand::u64(1..)))
    } else {
        let join_after = world.config.durations.for_command("talos_etcd_join");
        clusters
            .ring_to_join(&config.cluster)
            .filter(|_| now >= since.plus(join_after))
            .filter(|ring| super::etcd::quorum(world, &config.cluster, *ring).is_ok())
    };
    let advertises = config
        .subnets
        .etcd_address(&cluster::private_ips(server))
        .is_some();
    if let Some(ring) = ring
        && advertises
        && services::egress(world, server, &config).is_ok()
    {
        node.disk.etcd.member = Some(EtcdMember {
            id: fastrand::u64(1..),
            hostname: cluster::hostname(server, Some(&config)),
            ring,
        });
        node.departed = None;
        // Restored (an emulated ring's store was, at Bootstrap): a real
        // ring's etcd has yet to restore its snapshot.
        if node
            .disk
            .etcd
            .recovery
            .as_ref()
            .is_some_and(|r| r.real.is_none())
        {
            node.disk.etcd.recovery = None;
        }
    }
}

fn summarize(talos: &TalosNode, server: &Server, world: &World, clusters: &Clusters) -> Summary {
    let node = &talos.node;
    let config = node.config();
    let phase = match node.phase {
        Phase::Off => PhaseName::Off,
        Phase::Booting { .. } => PhaseName::Booting,
        Phase::Running => PhaseName::Running,
        Phase::Halted { .. } => PhaseName::Halted,
    };
    let apid = match (&node.phase, config) {
        (Phase::Running, None) => ApidState::Serving,
        (Phase::Running, Some(_)) if node.run.apid_issuer.is_some() => ApidState::Serving,
        (Phase::Running, Some(_)) => ApidState::AwaitingCertificate,
        _ => ApidState::Down,
    };
    let egress = config.map(|c| services::egress(world, server, c));
    let etcd_member = node.disk.etcd.member.is_some();
    let problem = match (&node.phase, config) {
        (Phase::Off, _) => Some("Talos is not running: the server is off or in rescue".into()),
        (Phase::Booting { .. }, _) => Some("booting".into()),
        (Phase::Halted { reason }, _) => Some(reason.clone()),
        (Phase::Running, None) => Some("in maintenance mode: no configuration applied yet".into()),
        (Phase::Running, Some(c)) if apid == ApidState::AwaitingCertificate => Some(format!(
            "waiting for trustd on a control plane to sign apid's certificate: {}",
            clusters
                .trustd_at(&c.endpoint, &c.trustd_token, server)
                .err()
                .unwrap_or_else(|| "not asked yet".into())
        )),
        (Phase::Running, Some(c)) => match &egress {
            Some(Err(e)) => Some(e.to_string()),
            _ => services::of_node(world, server, node, c, clusters)
                .into_iter()
                .find(|s| !s.healthy)
                .map(|s| format!("{} is {}: {}", s.id, s.state, s.message)),
        },
    };
    Summary {
        mode: node.mode(),
        phase,
        apid,
        machine_type: config.map(|c| c.machine_type),
        hostname: Some(cluster::hostname(server, config)),
        cluster_id: config.map(|c| c.cluster.id.clone()),
        egress_via: egress.and_then(Result::ok),
        bootstrapped: config.is_some_and(|c| clusters.has_etcd(&c.cluster))
            || node.disk.etcd.founder
            || etcd_member,
        etcd_member,
        healthy: problem.is_none(),
        problem,
        starts: node.run.incarnation,
    }
}

#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;
