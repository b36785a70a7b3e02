//! The Talos API calls as the emulated node carries them out on the world,
//! with the refusals Talos gives (maintenance mode, workers, bootstrap
//! done already, a node that is rebooting).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use tonic::Code;

use super::cluster::{self, Clusters};
use super::config::{self, ConfigError, MachineConfig};
use super::faults;
use super::kubeconfig::KubeconfigSource;
use super::lifecycle::{Restart, back_at, running_version};
use super::node::{EtcdMember, Trial};
use super::services::{self, ServiceStatus};
use super::version::{TalosVersion, installer_version};
use crate::clock::Timestamp;
use crate::events::SimEvent;
use crate::ids::Id;
use crate::resources::servers::{Server, ServerStatus, TalosNode};
use crate::state::World;

/// The node a call is for, as of the start of Talos that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRef {
    pub server: Id,
    pub incarnation: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyMode {
    Reboot,
    Auto,
    NoReboot,
    Staged,
    Try,
}

impl ApplyMode {
    /// As `talosctl apply --mode` spells it.
    fn flag(self) -> &'static str {
        match self {
            Self::Reboot => "reboot",
            Self::Auto => "auto",
            Self::NoReboot => "no-reboot",
            Self::Staged => "staged",
            Self::Try => "try",
        }
    }
}

pub struct ApplyRequest<'a> {
    pub data: &'a [u8],
    pub mode: ApplyMode,
    pub dry_run: bool,
    pub try_timeout: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub mode: ApplyMode,
    pub details: String,
    pub warnings: Vec<String>,
}

pub struct VersionReport {
    pub tag: String,
    pub arch: String,
    pub maintenance: bool,
}

/// How long a TRY config lasts when the request names no timeout.
const TRY_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the node is rebooting")]
    Rebooting,
    #[error("{0} is not available in maintenance mode")]
    Maintenance(&'static str),
    #[error("apply configuration --mode='{}' is not supported in maintenance mode", .0.flag())]
    ModeInMaintenance(ApplyMode),
    #[error("configuration validation failed: {0}")]
    InvalidConfig(#[from] ConfigError),
    #[error("configuration is not UTF-8 text")]
    NotText,
    #[error("the configuration cannot be applied with --mode='{}': {reason}, which needs a reboot", .mode.flag())]
    NeedsReboot {
        mode: ApplyMode,
        reason: &'static str,
    },
    #[error("{message}")]
    Injected { code: Code, message: String },
    #[error("bootstrap is only possible on a control plane node, not on a worker")]
    BootstrapOnWorker,
    #[error("etcd is already bootstrapped (the etcd data directory is not empty)")]
    AlreadyBootstrapped,
    #[error("etcd does not run on worker nodes")]
    EtcdOnWorker,
    #[error("etcd is not running on this node yet")]
    EtcdNotRunning,
    #[error("the admin kubeconfig is only available on control plane nodes")]
    KubeconfigOnWorker,
    #[error("the cluster is not bootstrapped yet: call Bootstrap first")]
    NotBootstrapped,
    #[error("invalid upgrade image: {0}")]
    InvalidImage(String),
    #[error("cannot proxy to {0}: no node of this cluster answers there")]
    NoSuchPeer(IpAddr),
    #[error("open {0}: no such file or directory")]
    NoSuchFile(String),
}

impl CallError {
    pub fn code(&self) -> Code {
        match self {
            Self::Rebooting
            | Self::EtcdNotRunning
            | Self::NotBootstrapped
            | Self::NoSuchPeer(_) => Code::Unavailable,
            Self::Maintenance(_) | Self::ModeInMaintenance(_) => Code::Unimplemented,
            Self::InvalidConfig(_) | Self::NotText | Self::InvalidImage(_) => Code::InvalidArgument,
            Self::NeedsReboot { .. }
            | Self::BootstrapOnWorker
            | Self::EtcdOnWorker
            | Self::KubeconfigOnWorker => Code::FailedPrecondition,
            Self::AlreadyBootstrapped => Code::AlreadyExists,
            Self::NoSuchFile(_) => Code::NotFound,
            Self::Injected { code, .. } => *code,
        }
    }
}

fn talos(server: &Server) -> Result<&TalosNode, CallError> {
    server.talos.as_ref().ok_or(CallError::Rebooting)
}

/// The node, if the Talos start the call reached is still running.
fn node(world: &World, at: NodeRef) -> Result<(&Server, &TalosNode), CallError> {
    let server = world.servers.get(&at.server).ok_or(CallError::Rebooting)?;
    let talos = talos(server)?;
    if !talos.node.is_running() || talos.node.run.incarnation != at.incarnation {
        return Err(CallError::Rebooting);
    }
    Ok((server, talos))
}

fn node_mut(world: &mut World, at: NodeRef) -> Result<&mut TalosNode, CallError> {
    node(world, at)?;
    world
        .servers
        .get_mut(&at.server)
        .and_then(|s| s.talos.as_mut())
        .ok_or(CallError::Rebooting)
}

fn configured(talos: &TalosNode, call: &'static str) -> Result<MachineConfig, CallError> {
    talos
        .node
        .config()
        .cloned()
        .ok_or(CallError::Maintenance(call))
}

/// The name the node answers with in proxied calls.
pub fn hostname(world: &World, at: NodeRef) -> Result<String, CallError> {
    let (server, talos) = node(world, at)?;
    Ok(cluster::hostname(server, talos.node.config()))
}

/// The node a call with `node` metadata goes to: the serving node itself,
/// or a peer of its cluster that answers.
pub fn peer(world: &World, at: NodeRef, ip: IpAddr) -> Result<NodeRef, CallError> {
    let (_, talos) = node(world, at)?;
    let cluster = configured(talos, "proxying")?.cluster;
    let IpAddr::V4(ip) = ip else {
        return Err(CallError::NoSuchPeer(ip));
    };
    let target = world
        .servers
        .values()
        .find(|s| has_ip(s, ip))
        .ok_or(CallError::NoSuchPeer(IpAddr::V4(ip)))?;
    if target.id == at.server {
        return Ok(at);
    }
    let peer = target.talos.as_ref().filter(|t| {
        t.node.is_running()
            && t.node.run.apid_issuer.is_some()
            && t.node.config().is_some_and(|c| c.cluster == cluster)
            && !faults::is_unreachable(&world.config.talos_faults, target)
    });
    match peer {
        Some(t) => Ok(NodeRef {
            server: target.id,
            incarnation: t.node.run.incarnation,
        }),
        None => Err(CallError::NoSuchPeer(IpAddr::V4(ip))),
    }
}

fn has_ip(server: &Server, ip: Ipv4Addr) -> bool {
    server
        .private_net
        .iter()
        .any(|p| p.ip == ip || p.alias_ips.contains(&ip))
}

pub fn version(world: &World, at: NodeRef) -> Result<VersionReport, CallError> {
    let (_, talos) = node(world, at)?;
    Ok(VersionReport {
        tag: talos.version.clone(),
        arch: talos.arch.clone().unwrap_or_else(|| "amd64".into()),
        maintenance: talos.node.config().is_none(),
    })
}

pub fn apply_configuration(
    world: &mut World,
    at: NodeRef,
    request: &ApplyRequest<'_>,
    now: Timestamp,
) -> Result<Applied, CallError> {
    let (server, talos) = node(world, at)?;
    let server = server.clone();
    let version = running_version(talos);
    let current = talos.node.config().cloned();
    if let Some((code, message)) =
        faults::take_apply_rejection(&mut world.config.talos_faults, &server)
    {
        return Err(CallError::Injected { code, message });
    }
    if current.is_none()
        && !matches!(
            request.mode,
            ApplyMode::Auto | ApplyMode::Try | ApplyMode::Reboot
        )
    {
        return Err(CallError::ModeInMaintenance(request.mode));
    }
    let text = std::str::from_utf8(request.data).map_err(|_| CallError::NotText)?;
    let next = config::parse(text, version.as_ref())?;
    let warnings = next.warnings.clone();
    let applied = |mode, details: String| Applied {
        mode,
        details,
        warnings: warnings.clone(),
    };
    if request.dry_run {
        let state = if current.is_some() {
            "the node is configured; nothing was changed"
        } else {
            "the node is in maintenance mode and has no configuration yet"
        };
        return Ok(applied(request.mode, format!("Dry run summary:\n{state}.")));
    }
    let install_back = back_at(world, &server, Restart::Install, now);
    let reboot_back = back_at(world, &server, Restart::Reboot, now);
    let node = &mut node_mut(world, at)?.node;
    let Some(current) = current else {
        // Maintenance mode: install the configured release and boot into it.
        let installs = next.installs.clone();
        node.disk.next_version = Some(installs.clone());
        node.disk.config = Some(next);
        node.restart(install_back);
        return Ok(applied(
            ApplyMode::Reboot,
            format!(
                "Installing Talos {installs}; the node reboots into the applied configuration."
            ),
        ));
    };
    let reboot_reason = current.reboot_needed_for(&next);
    match (request.mode, reboot_reason) {
        (ApplyMode::Staged, _) => {
            node.disk.staged = Some(next);
            Ok(applied(
                ApplyMode::Staged,
                "Staged the configuration for the next reboot.".into(),
            ))
        }
        (ApplyMode::Reboot, _) | (ApplyMode::Auto, Some(_)) => {
            node.disk.config = Some(next);
            node.run.trial = None;
            node.restart(reboot_back);
            Ok(applied(
                ApplyMode::Reboot,
                "Applied the configuration; rebooting.".into(),
            ))
        }
        (mode @ (ApplyMode::NoReboot | ApplyMode::Try), Some(reason)) => {
            Err(CallError::NeedsReboot { mode, reason })
        }
        (ApplyMode::Try, None) => {
            let timeout = request.try_timeout.unwrap_or(TRY_TIMEOUT);
            node.run.trial = Some(Trial {
                until: now.plus(timeout),
                previous: Box::new(current),
            });
            node.disk.config = Some(next);
            Ok(applied(
                ApplyMode::Try,
                format!(
                    "Applied the configuration for {}s; it rolls back unless applied again.",
                    timeout.as_secs()
                ),
            ))
        }
        (ApplyMode::Auto | ApplyMode::NoReboot, None) => {
            node.disk.config = Some(next);
            node.run.trial = None;
            Ok(applied(
                ApplyMode::NoReboot,
                "Applied the configuration without a reboot.".into(),
            ))
        }
    }
}

pub fn bootstrap(world: &mut World, at: NodeRef) -> Result<(), CallError> {
    let (_, talos) = node(world, at)?;
    let config = configured(talos, "Bootstrap")?;
    if !config.is_control_plane() {
        return Err(CallError::BootstrapOnWorker);
    }
    if Clusters::of(world).is_bootstrapped(&config.cluster) {
        return Err(CallError::AlreadyBootstrapped);
    }
    node_mut(world, at)?.node.disk.etcd.founder = true;
    Ok(())
}

pub fn etcd_members(world: &World, at: NodeRef) -> Result<Vec<EtcdMember>, CallError> {
    let (_, talos) = node(world, at)?;
    let config = configured(talos, "EtcdMemberList")?;
    if !config.is_control_plane() {
        return Err(CallError::EtcdOnWorker);
    }
    if talos.node.disk.etcd.member.is_none() {
        return Err(CallError::EtcdNotRunning);
    }
    Ok(Clusters::of(world).members(&config.cluster))
}

pub fn services(world: &World, at: NodeRef) -> Result<Vec<ServiceStatus>, CallError> {
    let (server, talos) = node(world, at)?;
    let config = configured(talos, "ServiceList")?;
    Ok(services::of(world, server, &talos.node, &config))
}

pub fn kubeconfig_source(world: &World, at: NodeRef) -> Result<KubeconfigSource, CallError> {
    let (_, talos) = node(world, at)?;
    let config = configured(talos, "Kubeconfig")?;
    if !config.is_control_plane() {
        return Err(CallError::KubeconfigOnWorker);
    }
    if !Clusters::of(world).is_bootstrapped(&config.cluster) {
        return Err(CallError::NotBootstrapped);
    }
    Ok(KubeconfigSource {
        cluster_name: config.cluster_name,
        endpoint: config.endpoint,
        ca: config.kubernetes_ca,
    })
}

/// A file of the node. The emulation has one: the machine config the node
/// runs, as it was applied.
pub fn read_file(world: &World, at: NodeRef, path: &str) -> Result<Vec<u8>, CallError> {
    let (_, talos) = node(world, at)?;
    let config = configured(talos, "Read")?;
    if path != config::CONFIG_PATH {
        return Err(CallError::NoSuchFile(path.to_string()));
    }
    Ok(config.text.expose().as_bytes().to_vec())
}

pub fn reboot(world: &mut World, at: NodeRef, now: Timestamp) -> Result<(), CallError> {
    let (server, talos) = node(world, at)?;
    configured(talos, "Reboot")?;
    let back = back_at(world, server, Restart::Reboot, now);
    node_mut(world, at)?.node.restart(back);
    Ok(())
}

/// Wipes the node back to maintenance mode. A graceful reset leaves etcd
/// first; otherwise the other members keep listing it. Without `reboot`
/// the node powers off.
pub fn reset(
    world: &mut World,
    at: NodeRef,
    graceful: bool,
    reboot: bool,
    now: Timestamp,
) -> Result<(), CallError> {
    let (server, talos) = node(world, at)?;
    let config = configured(talos, "Reset")?;
    let back = back_at(world, server, Restart::Reboot, now);
    let node = &mut node_mut(world, at)?.node;
    node.departed = match (&node.disk.etcd.member, graceful) {
        (Some(member), false) => Some(super::node::DepartedMember {
            cluster: config.cluster,
            member: member.clone(),
        }),
        _ => None,
    };
    node.wipe();
    node.restart(back);
    if !reboot && let Some(server) = world.servers.get_mut(&at.server) {
        server.status = ServerStatus::Off;
        world.emit(SimEvent::ServerStopped { server: at.server });
    }
    Ok(())
}

pub fn upgrade(
    world: &mut World,
    at: NodeRef,
    image: &str,
    now: Timestamp,
) -> Result<TalosVersion, CallError> {
    let (server, talos) = node(world, at)?;
    configured(talos, "Upgrade")?;
    let version = installer_version(image).map_err(|e| CallError::InvalidImage(e.to_string()))?;
    let back = back_at(world, server, Restart::Upgrade, now);
    let node = &mut node_mut(world, at)?.node;
    node.disk.next_version = Some(version.clone());
    node.restart(back);
    Ok(version)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::talos::faults::{GrpcCode, TalosFault};
    use crate::talos::node::{Mode, PhaseName};
    use crate::talos::sample::{SampleCluster, SampleNetwork, SampleNode};
    use crate::talos::testing::{Lab, cluster, control_plane, worker};

    fn request(config: &str, mode: ApplyMode) -> ApplyRequest<'_> {
        ApplyRequest {
            data: config.as_bytes(),
            mode,
            dry_run: false,
            try_timeout: None,
        }
    }

    fn apply(lab: &mut Lab, id: Id, config: &str, mode: ApplyMode) -> Result<Applied, CallError> {
        lab.on(id, |w, at, now| {
            apply_configuration(w, at, &request(config, mode), now)
        })
    }

    #[test]
    fn maintenance_apply_installs_the_configured_release_and_reboots() {
        let mut lab = Lab::new();
        let id = lab.server("cp-1", "10.0.128.11", "v1.11.3", None);
        lab.settle();
        let cluster = cluster();
        // A v1.11-style config that installs v1.12.6.
        let mut node = SampleNode::new(true, "v1.12.6", "10.0.0.1");
        node.network = SampleNetwork::Interfaces {
            gateway: "10.0.0.1".into(),
        };
        let config = cluster.machine_config(&node);
        assert!(matches!(
            apply(&mut lab, id, &config, ApplyMode::NoReboot),
            Err(CallError::ModeInMaintenance(ApplyMode::NoReboot))
        ));
        let mut dry = request(&config, ApplyMode::Auto);
        dry.dry_run = true;
        let summary = lab
            .on(id, |w, at, now| apply_configuration(w, at, &dry, now))
            .unwrap();
        assert!(summary.details.starts_with("Dry run summary"));
        assert_eq!(lab.talos(id).node.mode(), Mode::Maintenance);

        let before = lab.at(id);
        let applied = apply(&mut lab, id, &config, ApplyMode::Auto).unwrap();
        assert_eq!(applied.mode, ApplyMode::Reboot);
        assert!(matches!(
            version(&lab.world, before),
            Err(CallError::Rebooting)
        ));
        lab.settle();
        let report = version(&lab.world, lab.at(id)).unwrap();
        assert_eq!(
            (report.tag.as_str(), report.maintenance),
            ("v1.12.6", false)
        );
    }

    #[test]
    fn configured_nodes_apply_with_or_without_reboot() {
        let mut lab = Lab::new();
        let cluster = cluster();
        let id = lab.server(
            "cp-1",
            "10.0.128.11",
            "v1.12.6",
            Some(cluster.machine_config(&control_plane())),
        );
        lab.settle();
        let mut isolated = control_plane();
        isolated.network = SampleNetwork::Isolated;
        let same_cluster = cluster.machine_config(&isolated);
        let other_cluster = SampleCluster::generate("other", "https://x:6443")
            .unwrap()
            .machine_config(&control_plane());

        let incarnation = lab.at(id).incarnation;
        let applied = apply(&mut lab, id, &same_cluster, ApplyMode::NoReboot).unwrap();
        assert_eq!(applied.mode, ApplyMode::NoReboot);
        assert_eq!(lab.at(id).incarnation, incarnation);
        assert!(lab.talos(id).node.config().unwrap().routes.is_empty());
        assert!(matches!(
            apply(&mut lab, id, &other_cluster, ApplyMode::NoReboot),
            Err(CallError::NeedsReboot { .. })
        ));

        let staged = apply(
            &mut lab,
            id,
            &cluster.machine_config(&control_plane()),
            ApplyMode::Staged,
        );
        assert_eq!(staged.unwrap().mode, ApplyMode::Staged);
        assert!(lab.talos(id).node.config().unwrap().routes.is_empty());
        lab.on(id, reboot).unwrap();
        lab.settle();
        assert_eq!(lab.talos(id).node.config().unwrap().routes.len(), 1);

        let mut trial = request(&same_cluster, ApplyMode::Try);
        trial.try_timeout = Some(Duration::from_secs(30));
        lab.on(id, |w, at, now| apply_configuration(w, at, &trial, now))
            .unwrap();
        assert!(lab.talos(id).node.config().unwrap().routes.is_empty());
        lab.tick(Duration::from_secs(31));
        assert_eq!(
            lab.talos(id).node.config().unwrap().routes.len(),
            1,
            "rolled back"
        );

        let applied = apply(&mut lab, id, &other_cluster, ApplyMode::Auto).unwrap();
        assert_eq!(applied.mode, ApplyMode::Reboot);
        assert_eq!(
            lab.talos(id).node.summary.phase,
            PhaseName::Running,
            "not yet summarized"
        );
        lab.tick(Duration::ZERO);
        assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
    }

    #[test]
    fn bootstrap_happens_once_per_cluster_on_a_control_plane() {
        let mut lab = Lab::new();
        let cluster = cluster();
        let cp1 = lab.server(
            "cp-1",
            "10.0.128.11",
            "v1.12.6",
            Some(cluster.machine_config(&control_plane())),
        );
        let cp2 = lab.server(
            "cp-2",
            "10.0.128.12",
            "v1.12.6",
            Some(cluster.machine_config(&control_plane())),
        );
        let w = lab.server(
            "w-1",
            "10.0.128.21",
            "v1.12.6",
            Some(cluster.machine_config(&worker())),
        );
        let fresh = lab.server("new", "10.0.128.30", "v1.12.6", None);
        lab.settle();
        assert!(matches!(
            kubeconfig_source(&lab.world, lab.at(cp1)),
            Err(CallError::NotBootstrapped)
        ));
        assert!(matches!(
            lab.on(w, |w, at, _| bootstrap(w, at)),
            Err(CallError::BootstrapOnWorker)
        ));
        assert!(matches!(
            lab.on(fresh, |w, at, _| bootstrap(w, at)),
            Err(CallError::Maintenance("Bootstrap"))
        ));
        lab.on(cp1, |w, at, _| bootstrap(w, at)).unwrap();
        let again = lab.on(cp2, |w, at, _| bootstrap(w, at)).unwrap_err();
        assert_eq!(again.code(), Code::AlreadyExists);
        assert!(kubeconfig_source(&lab.world, lab.at(cp1)).is_ok());
        assert!(matches!(
            kubeconfig_source(&lab.world, lab.at(w)),
            Err(CallError::KubeconfigOnWorker)
        ));
        assert!(matches!(
            etcd_members(&lab.world, lab.at(w)),
            Err(CallError::EtcdOnWorker)
        ));
    }

    #[test]
    fn resets_leave_etcd_gracefully_or_stay_listed() {
        let mut lab = Lab::new();
        let cluster = cluster();
        let config = cluster.machine_config(&control_plane());
        let ids: Vec<Id> = ["cp-1", "cp-2", "cp-3"]
            .iter()
            .enumerate()
            .map(|(i, name)| lab.server(name, &format!("10.0.128.{}", 11 + i), "v1.12.6", None))
            .collect();
        lab.settle();
        for id in &ids {
            apply(&mut lab, *id, &config, ApplyMode::Auto).unwrap();
        }
        lab.settle();
        lab.on(ids[0], |w, at, _| bootstrap(w, at)).unwrap();
        lab.settle();
        assert_eq!(etcd_members(&lab.world, lab.at(ids[0])).unwrap().len(), 3);

        lab.on(ids[1], |w, at, now| reset(w, at, true, true, now))
            .unwrap();
        lab.on(ids[2], |w, at, now| reset(w, at, false, false, now))
            .unwrap();
        lab.hetzner();
        lab.settle();
        let names: Vec<String> = etcd_members(&lab.world, lab.at(ids[0]))
            .unwrap()
            .into_iter()
            .map(|m| m.hostname)
            .collect();
        assert_eq!(names, ["cp-1", "cp-3"]);
        assert_eq!(lab.talos(ids[1]).node.summary.mode, Mode::Maintenance);
        assert!(lab.talos(ids[1]).node.is_running());
        let off = &lab.world.servers[&ids[2]];
        assert_eq!(
            off.status,
            ServerStatus::Off,
            "reset without reboot powers off"
        );
    }

    #[test]
    fn proxying_reaches_running_peers_of_the_same_cluster() {
        let mut lab = Lab::new();
        let cluster = cluster();
        let config = cluster.machine_config(&control_plane());
        let cp1 = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config.clone()));
        let cp2 = lab.server("cp-2", "10.0.128.12", "v1.12.6", Some(config));
        let stranger = SampleCluster::generate("other", "https://x:6443").unwrap();
        lab.server(
            "x-1",
            "10.0.128.13",
            "v1.12.6",
            Some(stranger.machine_config(&control_plane())),
        );
        lab.settle();
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert_eq!(
            peer(&lab.world, lab.at(cp1), ip("10.0.128.12")).unwrap(),
            lab.at(cp2)
        );
        assert_eq!(
            peer(&lab.world, lab.at(cp1), ip("10.0.128.11")).unwrap(),
            lab.at(cp1)
        );
        for elsewhere in ["10.0.128.13", "10.0.128.99"] {
            assert!(matches!(
                peer(&lab.world, lab.at(cp1), ip(elsewhere)),
                Err(CallError::NoSuchPeer(_))
            ));
        }
        assert_eq!(hostname(&lab.world, lab.at(cp2)).unwrap(), "cp-2");
    }

    #[test]
    fn injected_rejections_come_before_validation() {
        let mut lab = Lab::new();
        let id = lab.server("cp-1", "10.0.128.11", "v1.12.6", None);
        lab.settle();
        lab.world
            .config
            .talos_faults
            .push(TalosFault::ApplyRejected {
                server: None,
                code: GrpcCode(Code::Unavailable),
                message: None,
                count: Some(1),
            });
        let rejected = apply(&mut lab, id, "not even yaml: [", ApplyMode::Auto).unwrap_err();
        assert_eq!(rejected.code(), Code::Unavailable);
        let invalid = apply(&mut lab, id, "not even yaml: [", ApplyMode::Auto).unwrap_err();
        assert_eq!(invalid.code(), Code::InvalidArgument);
    }
}
