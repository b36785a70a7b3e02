//! One group of servers (the control plane or a worker pool) and what every
//! operation on it shares: its spec, its clients and deadline, the configs
//! its nodes should run, its servers on Hetzner and their labels.
//!
//! The operations live beside it: `converge` (make Hetzner match the plan),
//! `scale_down`, `resize`, `placement`, `bring_up`, `upgrade`.

use crate::net::Proxy;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::OnceLock;

use tracing::info;

use super::ClusterError;
use super::budget::Budget;
use super::naming;
use super::record::Recorder;
use super::settings::{ClusterSettings, NodeTraits, config_sha256};
use super::slots::NodeSlot;
use super::wait::Deadline;
use crate::backup::{Destination, Recipients, RestoreFrom};
use crate::hcloud::Client;
use crate::hcloud::models::{Labels, Server};
use crate::talos::api::{NodeAddress, Trust};
use crate::talos::{MachineConfig, Role};

/// One group of servers and what makes its nodes differ from others.
#[derive(Debug, Clone)]
pub struct GroupSpec {
    /// `cp` or the pool's name.
    pub group: String,
    pub role: Role,
    pub server_type: String,
    pub location: String,
    /// The user's Hetzner labels (hct adds its own).
    pub server_labels: Labels,
    pub traits: NodeTraits,
    /// How many nodes may be out of service at once while it changes
    /// (pools; control planes go one at a time whatever it says).
    pub budget: Budget,
    /// What comes before a risky change (control planes: an etcd snapshot).
    pub snapshots: SnapshotRule,
    /// Control planes: the snapshot etcd starts from where it would start
    /// empty or is lost (`restore`).
    pub restore_from: Option<RestoreFrom>,
}

impl GroupSpec {
    pub(super) fn role_label(&self) -> &'static str {
        match self.role {
            Role::ControlPlane => "control-plane",
            Role::Worker => "worker",
        }
    }
}

/// Everything a group operation needs.
pub struct Group<'a> {
    pub settings: &'a ClusterSettings,
    pub spec: &'a GroupSpec,
    pub client: &'a Client,
    /// SOCKS5 proxy into the private network, if hct runs outside it.
    pub proxy: Option<Proxy>,
    pub trust: &'a Trust,
    pub deadline: &'a Deadline,
    pub recorder: &'a Recorder,
    /// What the operation did with etcd snapshots.
    pub snapshots: &'a SnapshotLog,
}

/// What an operation did with etcd snapshots, kept for state also when it
/// fails half-way.
#[derive(Debug, Default)]
pub struct SnapshotLog {
    /// Where the snapshot taken before the change (`pre_change`) is kept:
    /// a path, or `s3://<bucket>/<key>`.
    pub taken: OnceLock<String>,
    /// The SHA-256 of the snapshot etcd was restored from
    /// (`RestoreFrom::fingerprint`).
    pub restored: OnceLock<String>,
}

/// What a group does before a risky change.
#[derive(Debug, Clone)]
pub enum SnapshotRule {
    /// Nothing at stake: a worker pool (no etcd).
    NotNeeded,
    /// `skip_pre_change_snapshot = true`.
    Skip,
    /// Neither a place for the snapshot nor the skip: risky changes are
    /// refused.
    Refuse,
    /// `etcd_backup`: snapshots go to `destination`, encrypted.
    Store {
        destination: Destination,
        recipients: Recipients,
    },
}

/// A slot with the config its node should run.
pub(super) struct Desired {
    pub slot: NodeSlot,
    pub config: MachineConfig,
    pub sha256: String,
}

impl Group<'_> {
    pub(super) fn cluster(&self) -> &str {
        &self.settings.cluster_name
    }

    pub(super) fn group(&self) -> &str {
        &self.spec.group
    }

    /// Where hct reaches a node's Talos API (through the proxy, if any).
    pub fn address(&self, ip: Ipv4Addr) -> NodeAddress {
        NodeAddress::new(ip.into(), self.proxy)
    }

    /// The machine configs of `slots`, made before anything is touched so a
    /// bad patch fails without side effects.
    pub(super) fn desired(&self, slots: &[NodeSlot]) -> Result<Vec<Desired>, ClusterError> {
        slots
            .iter()
            .map(|slot| {
                let config = self
                    .settings
                    .node_config(&slot.name, slot.ip, self.spec.role, &self.spec.traits)
                    .map_err(ClusterError::config(&slot.name))?;
                let sha256 = config_sha256(&config);
                Ok(Desired {
                    slot: slot.clone(),
                    config,
                    sha256,
                })
            })
            .collect()
    }

    /// Hetzner's servers of this group, by name.
    pub(super) async fn existing(&self) -> Result<BTreeMap<String, Server>, ClusterError> {
        let servers = self
            .client
            .servers(&naming::group_selector(self.cluster(), self.group()))
            .await
            .map_err(ClusterError::hcloud(format!(
                "listing the servers of {}",
                self.group()
            )))?;
        Ok(servers.into_iter().map(|s| (s.name.clone(), s)).collect())
    }

    pub(super) fn wanted_labels(&self) -> Labels {
        naming::server_labels(
            self.cluster(),
            self.group(),
            self.spec.role_label(),
            &self.settings.secrets_fingerprint(),
            &self.spec.server_labels,
        )
    }

    pub(super) async fn restore_labels(&self, server: &Server) -> Result<(), ClusterError> {
        let wanted = self.wanted_labels();
        if server.labels != wanted {
            info!(node = %server.name, "restoring the server's labels");
            self.client
                .set_server_labels(server.id, &wanted)
                .await
                .map_err(ClusterError::hcloud(format!(
                    "setting the labels of {}",
                    server.name
                )))?;
        }
        Ok(())
    }

    pub(super) async fn delete_server(&self, server: &Server) -> Result<(), ClusterError> {
        info!(node = %server.name, id = server.id, "deleting server");
        let doing = format!("deleting server {}", server.name);
        if let Some(action) = self
            .client
            .delete_server(server.id)
            .await
            .map_err(ClusterError::hcloud(doing.clone()))?
        {
            self.client
                .wait_for_actions(vec![action], &doing, self.deadline.left())
                .await
                .map_err(ClusterError::hcloud(doing))?;
        }
        self.recorder.remove(&server.name);
        Ok(())
    }
}
