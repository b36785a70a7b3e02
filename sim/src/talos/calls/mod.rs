//! The Talos API calls as the emulated node carries them out on the world,
//! with the refusals Talos gives (maintenance mode, workers, bootstrap
//! done already, a node that is rebooting).

use std::net::IpAddr;
use std::time::Duration;

use tonic::Code;

use super::cluster::{self, Clusters};
use super::config::{self, ConfigError, MachineConfig};
use super::faults;
use super::kubeconfig::KubeconfigSource;
use super::lifecycle::{Restart, back_at, running_version};
use super::node::Trial;
use super::services::{self, ServiceStatus};
use super::version::{TalosVersion, installer_version};
use crate::clock::Timestamp;
use crate::events::SimEvent;
use crate::ids::Id;
use crate::resources::servers::{PrivateNet, Server, ServerStatus, TalosNode};
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
    #[error("bootstrap can only be performed on a control plane node")]
    BootstrapOnWorker,
    #[error("etcd data directory is not empty")]
    AlreadyBootstrapped,
    /// A control plane's call on a worker, as Talos names it.
    #[error("{0} is only available on control plane nodes")]
    ControlPlaneOnly(&'static str),
    #[error("etcd is not running on this node yet")]
    EtcdNotRunning,
    /// No etcd answered before the call's deadline (Talos' etcd client
    /// waits for one that does; see `etcd_members::as_asked`).
    #[error("context deadline exceeded")]
    EtcdUnreachable,
    #[error("etcdserver: no leader")]
    EtcdNoLeader,
    #[error("the cluster is not bootstrapped yet: call Bootstrap first")]
    NotBootstrapped,
    #[error("invalid upgrade image: {0}")]
    InvalidImage(String),
    /// Talos pulls the installer before it acknowledges an upgrade.
    #[error("error validating installer image {image:?}: {why}")]
    InstallerPull { image: String, why: String },
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
            Self::ControlPlaneOnly(_) => Code::Unimplemented,
            Self::EtcdUnreachable => Code::DeadlineExceeded,
            Self::EtcdNoLeader => Code::Unknown,
            Self::NeedsReboot { .. } | Self::BootstrapOnWorker => Code::FailedPrecondition,
            Self::AlreadyBootstrapped => Code::AlreadyExists,
            Self::NoSuchFile(_) => Code::NotFound,
            Self::Injected { code, .. } => *code,
            Self::InstallerPull { .. } => Code::Unknown,
        }
    }
}

fn talos(server: &Server) -> Result<&TalosNode, CallError> {
    server.talos.as_ref().ok_or(CallError::Rebooting)
}

/// The node, if the Talos start the call reached is still running.
pub(crate) fn node(world: &World, at: NodeRef) -> Result<(&Server, &TalosNode), CallError> {
    let server = world.servers.get(&at.server).ok_or(CallError::Rebooting)?;
    let talos = talos(server)?;
    if !talos.node.is_running() || talos.node.run.incarnation != at.incarnation {
        return Err(CallError::Rebooting);
    }
    Ok((server, talos))
}

pub(crate) fn node_mut(world: &mut World, at: NodeRef) -> Result<&mut TalosNode, CallError> {
    node(world, at)?;
    world
        .servers
        .get_mut(&at.server)
        .and_then(|s| s.talos.as_mut())
        .ok_or(CallError::Rebooting)
}

pub(crate) fn configured(
    talos: &TalosNode,
    call: &'static str,
) -> Result<MachineConfig, CallError> {
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
    let (serving, talos) = node(world, at)?;
    let cluster = configured(talos, "proxying")?.cluster;
    let IpAddr::V4(ip) = ip else {
        return Err(CallError::NoSuchPeer(ip));
    };
    // In the serving node's networks only: networks may overlap.
    let shares_network =
        |p: &PrivateNet| serving.private_net.iter().any(|q| q.network == p.network);
    let target = world
        .servers
        .values()
        .find(|s| s.private_net.iter().any(|p| shares_network(p) && p.has(ip)))
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
    let images_event = current
        .as_ref()
        .filter(|c| kubernetes_images(c) != kubernetes_images(&next))
        .map(|_| {
            let [api_server, controller_manager, scheduler, kubelet] = kubernetes_images(&next);
            SimEvent::KubernetesImages {
                server: server.id,
                name: cluster::hostname(&server, Some(&next)),
                api_server,
                controller_manager,
                scheduler,
                kubelet,
                at_ms: now.millis(),
            }
        });
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
    let result = match (request.mode, reboot_reason) {
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
    };
    if let (Ok(applied), Some(event)) = (&result, images_event)
        && applied.mode != ApplyMode::Staged
    {
        world.emit(event);
    }
    result
}

/// The Kubernetes image tags a config names: kube-apiserver,
/// kube-controller-manager, kube-scheduler, kubelet.
fn kubernetes_images(config: &MachineConfig) -> [Option<String>; 4] {
    [
        config.kubernetes_version.clone(),
        config.controller_manager_version.clone(),
        config.scheduler_version.clone(),
        config.kubelet_version.clone(),
    ]
}

/// Talos' Bootstrap: refused only when this node's own etcd data is not
/// empty. A control plane with empty data (new, or recreated) starts a new
/// etcd cluster of its own, whatever the other control planes run
/// (`recover_etcd`: `etcd_recover::bootstrap`).
pub fn bootstrap(world: &mut World, at: NodeRef) -> Result<(), CallError> {
    may_bootstrap(world, at)?;
    let node = &mut node_mut(world, at)?.node;
    node.disk.etcd.founder = true;
    node.run.etcd_failed = None;
    Ok(())
}

/// Talos' checks before a Bootstrap: a configured control plane whose etcd
/// data directory is empty; its config.
pub(crate) fn may_bootstrap(world: &World, at: NodeRef) -> Result<MachineConfig, CallError> {
    let (_, talos) = node(world, at)?;
    let config = configured(talos, "Bootstrap")?;
    if !config.is_control_plane() {
        return Err(CallError::BootstrapOnWorker);
    }
    if !talos.node.disk.etcd.data_dir_empty() {
        return Err(CallError::AlreadyBootstrapped);
    }
    Ok(config)
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
        return Err(CallError::ControlPlaneOnly("kubeconfig"));
    }
    if !Clusters::of(world).has_etcd(&config.cluster) {
        return Err(CallError::NotBootstrapped);
    }
    Ok(KubeconfigSource {
        cluster_name: config.cluster_name,
        endpoint: config.endpoint,
        ca: config.kubernetes_ca,
    })
}

/// A file of the node. The emulation has one: the machine config the node
/// runs, byte for byte as it was applied, comments and key order included.
///
/// That is what Talos stores (siderolabs/talos, v1.11 to v1.13):
/// `ApplyConfiguration` (`internal/app/machined/internal/server/v1alpha1/
/// v1alpha1_server.go`) loads the request's bytes with
/// `configloader.NewFromBytes`, which keeps them in a read-only container;
/// the `PersistenceController` (`controllers/config/persistence.go`) writes
/// `Provider().Bytes()` to the STATE partition, and a read-only container's
/// `Bytes()` (`pkg/machinery/config/container/container.go`) returns those
/// source bytes. A config from user data takes the same loader
/// (`controllers/config/acquire.go`). Only a container built from changed
/// documents (a client-side `talosctl patch`) would be re-encoded.
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
    let config = configured(talos, "Upgrade")?;
    let version = installer_version(image).map_err(|e| CallError::InvalidImage(e.to_string()))?;
    // The installer comes from its registry: without egress the pull fails.
    if let Err(no_egress) = services::egress(world, server, &config) {
        return Err(CallError::InstallerPull {
            image: image.to_string(),
            why: no_egress.to_string(),
        });
    }
    let back = back_at(world, server, Restart::Upgrade, now);
    let node = &mut node_mut(world, at)?.node;
    node.disk.next_version = Some(version.clone());
    node.restart(back);
    Ok(version)
}

pub mod etcd_health;
pub mod etcd_members;

#[cfg(test)]
mod tests;
