//! What one emulated Talos node is: what its disk holds, what it is doing
//! now, and the summary that `GET /_sim/state` shows (never a secret).
//!
//! The runtime is not saved with the world: a sim started from a state
//! file boots its nodes anew. The disk is saved apart (`SavedDisk`, by
//! `persist`, never in `/_sim/state`, as it holds the machine config's
//! secrets), so the nodes boot from the config they had, etcd included.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::config::{ClusterIdentity, MachineConfig, MachineType};
use super::etcd_recover::disk::{Recovery, Upload};
use super::pki::CertificateAuthority;
use super::version::TalosVersion;
use crate::clock::Timestamp;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeState {
    #[serde(flatten)]
    pub summary: Summary,
    #[serde(skip)]
    pub phase: Phase,
    #[serde(skip)]
    pub disk: Disk,
    #[serde(skip)]
    pub run: Runtime,
    /// The etcd member this node was when it was reset without leaving
    /// etcd: the other members still list it.
    #[serde(skip)]
    pub departed: Option<DepartedMember>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Phase {
    /// The server is off (or in rescue): Talos is not running.
    #[default]
    Off,
    /// Booting, installing or rebooting; apid answers from `until` on.
    Booting {
        until: Timestamp,
    },
    Running,
    /// Talos could not start, e.g. user data held an invalid config.
    Halted {
        reason: String,
    },
}

/// Talos' STATE and EPHEMERAL partitions, as far as the emulation cares.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Disk {
    /// The installed machine config; without one the node boots into
    /// maintenance mode (unless user data holds one).
    pub config: Option<MachineConfig>,
    /// Applied with mode STAGED: installed at the next boot.
    pub staged: Option<MachineConfig>,
    /// Written by an install or upgrade: the release the next boot runs.
    pub next_version: Option<TalosVersion>,
    pub etcd: EtcdData,
    /// The snapshot EtcdRecover uploaded (Talos' `/var/lib/etcd.snapshot`,
    /// on EPHEMERAL), until a recovering Bootstrap restored it.
    pub etcd_snapshot: Option<Upload>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EtcdData {
    /// Bootstrap was called here: this node founds a new etcd cluster.
    pub founder: bool,
    /// A Bootstrap that recovers from the uploaded snapshot: the etcd
    /// cluster the founder starts, with the snapshot's data.
    pub recovery: Option<Recovery>,
    pub member: Option<EtcdMember>,
    /// What a failed restore left in the data directory (etcdutl had
    /// written part of it), and why it failed: etcd cannot start there,
    /// and Bootstrap finds the directory not empty, until a reset.
    pub spoiled: Option<String>,
}

impl EtcdData {
    /// Whether the node holds data of an etcd cluster: it founded or
    /// joined one (whatever the other control planes run). Talos' test
    /// before a Bootstrap also counts a spoiled directory
    /// (`data_dir_empty`).
    pub fn is_empty(&self) -> bool {
        !self.founder && self.member.is_none()
    }

    /// Talos' test before a Bootstrap: the etcd data directory holds
    /// nothing at all.
    pub fn data_dir_empty(&self) -> bool {
        self.is_empty() && self.spoiled.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EtcdMember {
    pub id: u64,
    pub hostname: String,
    /// Which etcd cluster (etcd's own cluster ID): the one its founder's
    /// Bootstrap started. Nodes with the same secrets may run two, when a
    /// control plane with empty data is bootstrapped beside running ones.
    #[serde(default)]
    pub ring: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepartedMember {
    pub cluster: ClusterIdentity,
    pub member: EtcdMember,
}

/// The member of a server deleted while it was one (`talos::etcd`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoneMember {
    /// The cluster's `cluster.id`.
    pub cluster: String,
    pub member: EtcdMember,
}

/// One member as a cluster's etcd lists it, and whether it runs (its node
/// runs with etcd Running and healthy, by the emulation's own word).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberView {
    pub id: u64,
    pub hostname: String,
    pub up: bool,
    /// The etcd cluster it is a member of (`EtcdMember::ring`).
    pub ring: u64,
}

/// What lasts only while Talos runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Runtime {
    /// The server's boot count when Talos last started on it.
    pub boot_seen: Option<u32>,
    /// Counts the node's starts: calls on connections to an earlier start
    /// are turned away, as a rebooted node would.
    pub incarnation: u64,
    /// The CA that signed apid's certificate: the node's own OS CA on a
    /// control plane, a control plane's (via trustd) on a worker.
    pub apid_issuer: Option<CertificateAuthority>,
    /// A configuration applied with mode TRY, and what it replaced.
    pub trial: Option<Trial>,
    /// A worker's kubelet registered the node with the API server at the
    /// endpoint since Talos started; it keeps running if that goes away.
    pub kubelet_registered: bool,
    /// When Talos came up with its config this start: a control plane
    /// joins a running etcd only some time after (`talos_etcd_join`).
    pub configured_since: Option<Timestamp>,
    /// The etcd service Bootstrap started failed before it ran, and why
    /// (a recovery whose snapshot is missing or unreadable): it stays
    /// Failed until the next Bootstrap or start of Talos.
    pub etcd_failed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trial {
    pub until: Timestamp,
    pub previous: Box<MachineConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Maintenance,
    Configured,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    #[default]
    Off,
    Booting,
    Running,
    Halted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApidState {
    #[default]
    Down,
    Serving,
    /// A worker waiting for trustd on a control plane to sign its certificate.
    AwaitingCertificate,
}

/// The node at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub mode: Mode,
    pub phase: PhaseName,
    pub apid: ApidState,
    pub machine_type: Option<MachineType>,
    pub hostname: Option<String>,
    pub cluster_id: Option<String>,
    /// The gateway its default route leaves through, when it has one.
    pub egress_via: Option<Ipv4Addr>,
    pub bootstrapped: bool,
    pub etcd_member: bool,
    pub healthy: bool,
    /// Why it is not healthy.
    pub problem: Option<String>,
    /// How often Talos started on the node (boots, reboots, upgrades).
    pub starts: u64,
}

impl NodeState {
    pub fn config(&self) -> Option<&MachineConfig> {
        self.disk.config.as_ref()
    }

    /// The etcd member that stays listed when this node's server is
    /// deleted: the one it is, or the one it was when reset without
    /// leaving.
    pub fn lingering_member(&self) -> Option<GoneMember> {
        match (&self.disk.etcd.member, self.config()) {
            (Some(member), Some(config)) => Some(GoneMember {
                cluster: config.cluster.id.clone(),
                member: member.clone(),
            }),
            _ => self.departed.as_ref().map(|d| GoneMember {
                cluster: d.cluster.id.clone(),
                member: d.member.clone(),
            }),
        }
    }

    pub fn is_running(&self) -> bool {
        self.phase == Phase::Running
    }

    pub fn mode(&self) -> Mode {
        if self.disk.config.is_some() {
            Mode::Configured
        } else {
            Mode::Maintenance
        }
    }

    /// Goes down and comes back at `until`: running connections die with
    /// this start of the node.
    pub fn restart(&mut self, until: Timestamp) {
        self.phase = Phase::Booting { until };
        self.run.apid_issuer = None;
        self.run.configured_since = None;
        self.run.etcd_failed = None;
        self.run.incarnation += 1;
    }

    /// The server lost power.
    pub fn power_off(&mut self) {
        self.phase = Phase::Off;
        self.run = Runtime {
            boot_seen: self.run.boot_seen,
            incarnation: self.run.incarnation + 1,
            ..Runtime::default()
        };
    }

    /// Wipes the node back to maintenance mode (Talos' reset).
    pub fn wipe(&mut self) {
        self.disk = Disk {
            next_version: self.disk.next_version.take(),
            ..Disk::default()
        };
        self.run.trial = None;
    }
}

/// A disk as `--state` saves it: the configs as applied (re-parsed at
/// load), the release to boot next, the etcd membership, and what etcd
/// recovery left (an uploaded snapshot in base64, a pending recovery, a
/// spoiled data directory).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SavedDisk {
    pub config: Option<String>,
    pub staged: Option<String>,
    pub next_version: Option<String>,
    pub etcd_founder: bool,
    pub etcd_member: Option<(u64, String)>,
    pub etcd_ring: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etcd_snapshot: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etcd_recovery: Option<Recovery>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etcd_spoiled: Option<String>,
}

impl SavedDisk {
    pub fn of(disk: &Disk) -> Self {
        Self {
            config: disk.config.as_ref().map(|c| c.text.expose().to_string()),
            staged: disk.staged.as_ref().map(|c| c.text.expose().to_string()),
            next_version: disk.next_version.as_ref().map(ToString::to_string),
            etcd_founder: disk.etcd.founder,
            etcd_member: disk
                .etcd
                .member
                .as_ref()
                .map(|m| (m.id, m.hostname.clone())),
            etcd_ring: disk.etcd.member.as_ref().map_or(0, |m| m.ring),
            etcd_snapshot: disk.etcd_snapshot.as_ref().map(Upload::to_base64),
            etcd_recovery: disk.etcd.recovery.clone(),
            etcd_spoiled: disk.etcd.spoiled.clone(),
        }
    }

    /// The disk back, its configs parsed for the release `running`; a
    /// config that no longer parses is dropped (the node boots as without).
    pub fn restore(&self, running: Option<&TalosVersion>) -> Disk {
        let parse = |text: &Option<String>| {
            text.as_deref()
                .and_then(|t| super::config::parse(t, running).ok())
        };
        Disk {
            config: parse(&self.config),
            staged: parse(&self.staged),
            next_version: self.next_version.as_deref().and_then(|v| v.parse().ok()),
            etcd: EtcdData {
                founder: self.etcd_founder,
                recovery: self.etcd_recovery.clone(),
                member: self.etcd_member.as_ref().map(|(id, hostname)| EtcdMember {
                    id: *id,
                    hostname: hostname.clone(),
                    ring: self.etcd_ring,
                }),
                spoiled: self.etcd_spoiled.clone(),
            },
            etcd_snapshot: self.etcd_snapshot.as_deref().and_then(Upload::from_base64),
        }
    }
}
