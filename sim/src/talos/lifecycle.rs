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
use super::config::{self, MachineConfig};
use super::faults;
use super::network::{self, NoEgress};
use super::node::{ApidState, EtcdMember, Phase, PhaseName, Summary};
use super::user_data;
use super::version::TalosVersion;
use crate::clock::Timestamp;
use crate::ids::Id;
use crate::resources::servers::{BootTarget, Server, ServerStatus, TalosNode};
use crate::state::World;
use std::net::Ipv4Addr;

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

/// The gateways of the networks the server is attached to.
pub fn gateways(world: &World, server: &Server) -> Vec<Ipv4Addr> {
    server
        .private_net
        .iter()
        .filter_map(|p| world.networks.get(&p.network))
        .map(|n| n.gateway())
        .collect()
}

/// Whether the node's traffic gets out, and through which gateway.
pub fn egress(
    world: &World,
    server: &Server,
    config: &MachineConfig,
) -> Result<Ipv4Addr, NoEgress> {
    network::egress(&config.routes, &gateways(world, server))
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

pub fn apply(world: &mut World, updates: Vec<(Id, TalosNode)>) {
    for (id, node) in updates {
        if let Some(server) = world.servers.get_mut(&id) {
            server.talos = Some(node);
        }
    }
}

/// Brings every node up to `now`.
pub fn settle(world: &mut World, now: Timestamp) {
    let updates = plan(world, now);
    apply(world, updates);
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
                .trustd(&config.cluster, &config.trustd_token)
                .cloned();
        }
        return;
    }
    let joinable = node.disk.etcd.founder || clusters.has_running_member(&config.cluster);
    if node.disk.etcd.member.is_none() && joinable && egress(world, server, &config).is_ok() {
        node.disk.etcd.member = Some(EtcdMember {
            id: fastrand::u64(1..),
            hostname: cluster::hostname(server, Some(&config)),
        });
        node.departed = None;
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
    let egress = config.map(|c| egress(world, server, c));
    let etcd_member = node.disk.etcd.member.is_some();
    let control_plane = config.is_some_and(MachineConfig::is_control_plane);
    let problem = match (&node.phase, config) {
        (Phase::Off, _) => Some("Talos is not running: the server is off or in rescue".into()),
        (Phase::Booting { .. }, _) => Some("booting".into()),
        (Phase::Halted { reason }, _) => Some(reason.clone()),
        (Phase::Running, None) => Some("in maintenance mode: no configuration applied yet".into()),
        (Phase::Running, Some(_)) if apid == ApidState::AwaitingCertificate => {
            Some("waiting for trustd on a control plane to sign apid's certificate".into())
        }
        (Phase::Running, Some(_)) => match &egress {
            Some(Err(e)) => Some(e.to_string()),
            _ if control_plane && !etcd_member => {
                Some("etcd waits for bootstrap or a running member to join".into())
            }
            _ => None,
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
        bootstrapped: config.is_some_and(|c| clusters.is_bootstrapped(&c.cluster))
            || node.disk.etcd.founder
            || etcd_member,
        etcd_member,
        healthy: problem.is_none(),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::resources::servers::Power;
    use crate::talos::faults::{ServerRef, TalosFault};
    use crate::talos::node::Mode;
    use crate::talos::sample::SampleNetwork;
    use crate::talos::testing::{Lab, cluster, control_plane, worker};

    const MOMENT: Duration = Duration::from_millis(10);

    #[test]
    fn boots_into_maintenance_without_a_config() {
        let mut lab = Lab::new();
        let id = lab.server("node-1", "10.0.128.5", "v1.12.6", None);
        lab.tick(Duration::ZERO);
        assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
        assert_eq!(lab.talos(id).node.summary.apid, ApidState::Down);
        lab.tick(MOMENT);
        assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
        lab.tick(Duration::from_millis(100));
        let summary = &lab.talos(id).node.summary;
        assert_eq!(summary.phase, PhaseName::Running);
        assert_eq!(summary.mode, Mode::Maintenance);
        assert_eq!(summary.apid, ApidState::Serving);
        assert_eq!(summary.hostname.as_deref(), Some("node-1"));
        assert!(!summary.healthy);
    }

    #[test]
    fn user_data_configures_the_node_at_boot() {
        let mut lab = Lab::new();
        let cluster = cluster();
        let mut node = control_plane();
        node.hostname = Some("control-1".into());
        let id = lab.server(
            "cp-1",
            "10.0.128.5",
            "v1.12.6",
            Some(cluster.machine_config(&node)),
        );
        lab.settle();
        let talos = lab.talos(id);
        assert_eq!(talos.node.summary.mode, Mode::Configured);
        assert_eq!(talos.node.summary.hostname.as_deref(), Some("control-1"));
        assert_eq!(talos.node.summary.egress_via, Some(GATEWAY_IP));
        assert_eq!(
            talos.node.run.apid_issuer.as_ref(),
            Some(&talos.node.config().unwrap().os_ca)
        );
        assert_eq!(
            talos.node.summary.problem.as_deref(),
            Some("etcd waits for bootstrap or a running member to join")
        );
    }

    const GATEWAY_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

    #[test]
    fn an_invalid_config_in_user_data_halts_talos() {
        let mut lab = Lab::new();
        let config = cluster().machine_config(&control_plane());
        let broken = config.replace("type: controlplane", "type: master");
        let id = lab.server("cp-1", "10.0.128.5", "v1.12.6", Some(broken));
        lab.settle();
        let summary = &lab.talos(id).node.summary;
        assert_eq!(summary.phase, PhaseName::Halted);
        assert!(
            summary
                .problem
                .as_deref()
                .unwrap()
                .contains("unknown machine type"),
            "{summary:?}"
        );
        let other = lab.server(
            "other",
            "10.0.128.6",
            "v1.12.6",
            Some("#cloud-config\n".into()),
        );
        lab.settle();
        assert_eq!(lab.talos(other).node.summary.mode, Mode::Maintenance);
    }

    #[test]
    fn power_cycles_stop_and_restart_talos() {
        let mut lab = Lab::new();
        let id = lab.server("node-1", "10.0.128.5", "v1.12.6", None);
        lab.settle();
        let first = lab.talos(id).node.run.incarnation;
        lab.world.power(id, Power::Off, lab.now).unwrap();
        lab.hetzner();
        lab.tick(Duration::ZERO);
        assert_eq!(lab.talos(id).node.phase, Phase::Off);
        lab.world.power(id, Power::On, lab.now).unwrap();
        lab.hetzner();
        lab.settle();
        assert!(lab.talos(id).node.is_running());
        assert!(lab.talos(id).node.run.incarnation > first);
    }

    #[test]
    fn slow_boot_faults_delay_the_node() {
        let mut lab = Lab::new();
        lab.world.config.talos_faults.push(TalosFault::SlowBoot {
            server: Some(ServerRef::Name("node-1".into())),
            delay_ms: 5_000,
        });
        let id = lab.server("node-1", "10.0.128.5", "v1.12.6", None);
        lab.tick(Duration::ZERO);
        lab.tick(Duration::from_secs(4));
        assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
        lab.tick(Duration::from_secs(2));
        assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Running);
    }

    #[test]
    fn workers_wait_for_trustd_and_control_planes_form_etcd() {
        let mut lab = Lab::new();
        let cluster = cluster();
        let w = lab.server(
            "w-1",
            "10.0.128.20",
            "v1.12.6",
            Some(cluster.machine_config(&worker())),
        );
        lab.settle();
        assert_eq!(
            lab.talos(w).node.summary.apid,
            ApidState::AwaitingCertificate
        );

        let config = cluster.machine_config(&control_plane());
        let cp1 = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config.clone()));
        let cp2 = lab.server("cp-2", "10.0.128.12", "v1.12.6", Some(config));
        lab.settle();
        assert_eq!(lab.talos(w).node.summary.apid, ApidState::Serving);
        assert!(lab.talos(w).node.summary.healthy);
        assert!(!lab.talos(cp1).node.summary.etcd_member);

        lab.world
            .servers
            .get_mut(&cp1)
            .unwrap()
            .talos
            .as_mut()
            .unwrap()
            .node
            .disk
            .etcd
            .founder = true;
        lab.tick(MOMENT);
        assert!(lab.talos(cp1).node.summary.etcd_member);
        assert!(
            !lab.talos(cp2).node.summary.etcd_member,
            "joins a member seen running"
        );
        lab.tick(MOMENT);
        assert!(lab.talos(cp2).node.summary.etcd_member);
        for id in [w, cp1, cp2] {
            let summary = &lab.talos(id).node.summary;
            assert!(summary.bootstrapped && summary.healthy, "{summary:?}");
        }
    }

    #[test]
    fn without_a_default_route_etcd_never_starts() {
        let mut lab = Lab::new();
        let mut isolated = control_plane();
        isolated.network = SampleNetwork::Isolated;
        let id = lab.server(
            "cp-1",
            "10.0.128.11",
            "v1.12.6",
            Some(cluster().machine_config(&isolated)),
        );
        lab.settle();
        lab.world
            .servers
            .get_mut(&id)
            .unwrap()
            .talos
            .as_mut()
            .unwrap()
            .node
            .disk
            .etcd
            .founder = true;
        lab.settle();
        let summary = &lab.talos(id).node.summary;
        assert!(!summary.etcd_member && !summary.healthy && summary.egress_via.is_none());
        assert!(
            summary
                .problem
                .as_deref()
                .unwrap()
                .starts_with("no default route")
        );
    }
}
