//! What happened to servers, for code that emulates what runs on them (a
//! later Talos emulation subscribes to boots and network attachments).

use std::net::Ipv4Addr;

use serde::Serialize;

use crate::ids::Id;
use crate::resources::servers::{BootTarget, TalosNode};
use crate::talos::node::PhaseName;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SimEvent {
    ServerCreated {
        server: Id,
    },
    /// The server finished booting (power on, reset, reboot, type change).
    ServerBooted {
        server: Id,
        into: BootTarget,
        talos: Option<TalosNode>,
    },
    ServerStopped {
        server: Id,
    },
    ServerDeleted {
        server: Id,
    },
    AttachedToNetwork {
        server: Id,
        network: Id,
        ip: Ipv4Addr,
    },
    DetachedFromNetwork {
        server: Id,
        network: Id,
        ip: Ipv4Addr,
    },
    /// A Talos node's phase, health or start count changed: the sim's own
    /// timeline of its nodes (e.g. to see that upgrades go one at a time).
    TalosNode {
        server: Id,
        name: String,
        phase: PhaseName,
        healthy: bool,
        /// How often Talos started on it (each reboot, upgrade or boot).
        starts: u64,
        at_ms: u64,
    },
    /// A configured node took a config that names other Kubernetes images
    /// (the control plane's static pods or the kubelet): the timeline of a
    /// Kubernetes upgrade. The tags as the config names them (None: Talos'
    /// default).
    KubernetesImages {
        server: Id,
        name: String,
        api_server: Option<String>,
        controller_manager: Option<String>,
        scheduler: Option<String>,
        kubelet: Option<String>,
        at_ms: u64,
    },
    /// A cluster's etcd members, or which of them run, changed
    /// (`talos::etcd`): (hostname, runs) per member, by hostname.
    EtcdMembers {
        cluster: String,
        members: Vec<(String, bool)>,
    },
}
