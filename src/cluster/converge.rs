//! Making a group's servers match the plan: create what is missing
//! (adopting servers of ours that exist but are not in state, after
//! `leftovers` has judged the others), scale down, restore
//! labels, resize, and re-apply changed machine configs a budget of nodes at
//! a time (`budget`; upgrading Talos first when the release changed, a pool
//! only once its control plane runs that release; a new Kubernetes release
//! through `kubernetes_upgrade`). Every server is
//! recorded the moment it exists or is gone.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use futures_util::future::join_all;
use tokio::sync::OnceCell;
use tracing::{info, warn};

use super::ClusterError;
use super::control_plane;
use super::group::{Desired, Group, SnapshotRule};
use super::kubernetes_upgrade;
use super::leftovers::{self, Found};
use super::pre_change::{self, Change, Planned, Risk};
use super::record::{FOREIGN_CA, IN_MAINTENANCE, NodeRecord};
use super::settings::ConfigDelivery;
use super::slots::{self, NodeSlot};
use super::upgrade;
use super::wait::{self, Retry};
use crate::hcloud::models::Server;
use crate::hcloud::{CreateStep, PrivateServer};
use crate::talos::Role;
use crate::talos::api::{ApplyMode, TalosClient, TalosError, Trust};

impl Group<'_> {
    /// Makes the group match `slots`. Returns whether the group had servers
    /// of its own before (in state, or adopted from a killed run of this
    /// state): a control plane's etcd data may be on their disks.
    pub async fn converge(&self, slots: &[NodeSlot]) -> Result<bool, ClusterError> {
        let desired = self.desired(slots)?;
        let mut existing = self.existing().await?;

        // State follows Hetzner: servers deleted behind our back are
        // forgotten (and created again below).
        for node in self.recorder.nodes() {
            if !existing.values().any(|s| s.id == node.server_id) {
                info!(node = %node.name, "server no longer exists; it will be created again");
                self.recorder.remove(&node.name);
            }
        }

        // A configured node a refresh found answering without the cluster's
        // CA is never sent anything: stop before touching the group, unless
        // it is to go (a scale-down, or hct's own reset before a delete
        // that failed).
        if let Some((node, answer)) = self
            .recorder
            .nodes()
            .iter()
            .filter(|n| desired.iter().any(|d| d.slot.name == n.name))
            .find_map(|n| Some((n.name.clone(), n.untrusted()?.to_string())))
        {
            return Err(ClusterError::Untrusted { node, answer });
        }
        self.leftovers(&mut existing).await?;
        // What is left is this state's: recorded, or carrying its secrets.
        let had_servers = !existing.is_empty();
        let risky = self.before_scale_down(&desired, &existing).await?;

        self.scale_down(&desired, &mut existing).await?;
        let groups = self
            .ensure_placement_groups(slots::placement_groups_for(slots.len() as u32))
            .await?;

        // Missing servers, and servers of ours a killed run left behind
        // (not in state, or not yet attached and running), go through the
        // creation flow, which adopts them instead of creating duplicates.
        let network = self.settings.network_id;
        let recorded = self.recorder.nodes();
        let unfinished: Vec<(&Desired, Option<&NodeRecord>)> = desired
            .iter()
            .filter_map(|d| {
                let record = recorded.iter().find(|n| n.name == d.slot.name);
                let ready = existing.get(&d.slot.name).is_some_and(|s| {
                    s.status == "running"
                        && s.private_ip(network).is_some()
                        && record.is_some_and(|r| r.server_id == s.id)
                });
                (!ready).then_some((d, record))
            })
            .collect();
        let created = join_all(unfinished.iter().map(|(d, record)| {
            let adopting = existing.contains_key(&d.slot.name);
            self.create(
                d,
                &groups,
                adopting,
                record.and_then(|r| r.config_sha256.clone()),
            )
        }))
        .await;
        for result in created {
            result?;
        }

        // Every server runs again (a powered-off one was started above):
        // the snapshot before the resize and the new configs.
        if let Some(reasons) = risky {
            pre_change::before_change(self, &reasons).await?;
        }
        for d in &desired {
            if let Some(server) = existing.get(&d.slot.name) {
                self.restore_labels(server).await?;
            }
        }
        // A new server type: one node at a time, each back in service before
        // the next goes down.
        let resizing: Vec<&Server> = desired
            .iter()
            .filter_map(|d| existing.get(&d.slot.name))
            .filter(|s| s.server_type.name != self.spec.server_type)
            .collect();
        self.resize(desired.len(), &resizing).await?;
        // A budget of nodes at a time (control planes: one), so a bad config
        // never takes down more than that.
        let changed: Vec<(&Desired, NodeRecord)> = desired
            .iter()
            .filter_map(|d| {
                let node = self.recorder.node(&d.slot.name)?;
                (node.config_sha256.as_deref() != Some(d.sha256.as_str())).then_some((d, node))
            })
            .collect();
        if !changed.is_empty() && self.spec.role == Role::Worker {
            // Terraform may apply the pool beside its cluster: the control
            // plane moves to a release first.
            control_plane::until_on_release(self).await?;
        }
        // A new kubernetes_version: the control-plane components first,
        // node by node, then the kubelets with the configs below.
        let changed_nodes: Vec<NodeRecord> = changed.iter().map(|(_, n)| n.clone()).collect();
        kubernetes_upgrade::control_plane_components(self, &changed_nodes).await?;
        let control_plane_on_release = OnceCell::new();
        let on_release = &control_plane_on_release;
        self.rolling(desired.len(), changed, |(d, node)| async move {
            // A new talos_version changes every config (its installer
            // image): the node moves to that release before it gets the
            // config made for it.
            upgrade::to_release(self, &node).await?;
            let kubelet_moves = kubernetes_upgrade::kubelet_moves(self, &node, on_release).await?;
            info!(node = %node.name, "machine config changed; applying it");
            self.apply_config(d, node.ip).await?;
            if kubelet_moves {
                kubernetes_upgrade::until_kubelet(self, &node).await?;
            }
            Ok(())
        })
        .await?;
        self.remove_spare_placement_groups(
            &groups,
            slots::placement_groups_for(slots.len() as u32),
        )
        .await?;
        Ok(had_servers)
    }

    /// A risky change of a control plane (`pre_change`): refused now when
    /// there is nowhere for its snapshot; the snapshot now when a node
    /// leaves; else what is still to do once every server runs.
    async fn before_scale_down(
        &self,
        desired: &[Desired],
        existing: &BTreeMap<String, Server>,
    ) -> Result<Option<Vec<String>>, ClusterError> {
        let planned: Vec<Planned> = desired
            .iter()
            .map(|d| Planned {
                name: &d.slot.name,
                sha256: Some(&d.sha256),
            })
            .collect();
        let resizing = desired
            .iter()
            .filter_map(|d| existing.get(&d.slot.name))
            .any(|s| s.server_type.name != self.spec.server_type);
        let Risk::Risky(changes) = pre_change::at_risk(&self.recorder.nodes(), &planned, resizing)
        else {
            return Ok(None);
        };
        let reasons = pre_change::in_words(&changes);
        let leaving = changes.iter().any(|c| matches!(c, Change::Leaves(_)));
        if leaving || matches!(self.spec.snapshots, SnapshotRule::Refuse) {
            pre_change::before_change(self, &reasons).await?;
            return Ok(None);
        }
        Ok(Some(reasons))
    }

    /// Servers of the group that state does not know: those of this
    /// cluster's secrets are adopted (below), those that provably hold
    /// nothing are deleted; any that may be live stops the apply before
    /// anything is touched.
    async fn leftovers(&self, existing: &mut BTreeMap<String, Server>) -> Result<(), ClusterError> {
        let servers: Vec<Server> = existing.values().cloned().collect();
        let fingerprint = self.settings.secrets_fingerprint();
        let strangers = leftovers::strangers(
            &servers,
            &self.recorder.nodes(),
            Some(&fingerprint),
            self.settings.network_id,
            self.proxy,
            Some(self.trust),
        )
        .await;
        if let Some(refusal) = leftovers::refusal(self.cluster(), Some(self.group()), &strangers) {
            return Err(refusal);
        }
        for stranger in strangers.iter().filter(|s| s.found == Found::Empty) {
            if let Some(server) = existing.remove(&stranger.name) {
                warn!(node = %server.name, "server of this cluster's labels runs no config (maintenance mode): a leftover of an interrupted create; deleting it");
                self.delete_server(&server).await?;
            }
        }
        Ok(())
    }

    /// Creates one node's server (stopped, attached, powered on), recording
    /// it the moment it exists; with `apply` delivery (or an adopted server
    /// whose config is unknown), applies its config over the Talos API.
    /// `adopting`: a server of this name exists already (its config is
    /// `known_sha256` if state recorded one, else applied again).
    async fn create(
        &self,
        d: &Desired,
        groups: &BTreeMap<u32, i64>,
        adopting: bool,
        known_sha256: Option<String>,
    ) -> Result<String, ClusterError> {
        let user_data = match self.settings.delivery {
            ConfigDelivery::UserData => Some(
                crate::talos::user_data(d.config.as_str())
                    .map_err(ClusterError::config(&d.slot.name))?,
            ),
            ConfigDelivery::Apply => None,
        };
        let spec = PrivateServer {
            name: d.slot.name.clone(),
            server_type: self.spec.server_type.clone(),
            location: self.spec.location.clone(),
            image: self.settings.image_id.clone(),
            network: self.settings.network_id,
            ip: d.slot.ip,
            placement_group: groups.get(&d.slot.placement_group).copied(),
            labels: self.wanted_labels(),
            user_data,
            ssh_keys: self.settings.ssh_key_ids.clone(),
        };
        info!(node = %d.slot.name, ip = %d.slot.ip, "creating server");
        let recorded_sha = match (adopting, self.settings.delivery) {
            (true, _) => known_sha256,
            (false, ConfigDelivery::UserData) => Some(d.sha256.clone()),
            (false, ConfigDelivery::Apply) => None,
        };
        let needs_apply = recorded_sha.is_none();
        self.client
            .create_private_server_in_steps(&spec, self.deadline.left(), |server| {
                self.recorder.put(
                    self.cluster(),
                    self.group(),
                    NodeRecord {
                        name: server.name.clone(),
                        server_id: server.id,
                        ip: d.slot.ip,
                        config_sha256: recorded_sha.clone(),
                    },
                );
            })
            .await
            .map_err(|failed| {
                // "creating server x", "creating server x: powering on"
                let doing = match failed.step {
                    CreateStep::Creating => format!("creating server {}", d.slot.name),
                    step => format!("creating server {}: {step}", d.slot.name),
                };
                ClusterError::hcloud(doing)(failed.source)
            })?;
        if needs_apply {
            self.apply_config(d, d.slot.ip).await?;
        }
        Ok(d.slot.name.clone())
    }

    /// Gives the node its config over mTLS with the cluster's CA. Only a
    /// node hct has never seen configured (a server it made, on its first
    /// boot) gets it in maintenance mode, where Talos takes a config from
    /// anyone; a configured node that answers in maintenance mode or with
    /// another CA gets nothing, and the apply stops naming it.
    async fn apply_config(&self, d: &Desired, ip: Ipv4Addr) -> Result<(), ClusterError> {
        let address = self.address(ip);
        let config = d.config.as_str().as_bytes();
        let step = "applying the machine config";
        let never_configured = self
            .recorder
            .node(&d.slot.name)
            .is_none_or(|node| node.never_configured());
        let untrusted = |answer: &str| {
            Retry::Fatal(ClusterError::Untrusted {
                node: d.slot.name.clone(),
                answer: answer.to_string(),
            })
        };
        let attempt = || {
            let address = address.clone();
            async move {
                match TalosClient::connect(&address, self.trust).await {
                    Ok(mut client) => {
                        let applied = client.apply_configuration(config, ApplyMode::Auto).await?;
                        info!(node = %d.slot.name, mode = %applied.mode, "machine config applied");
                        return Ok(());
                    }
                    Err(TalosError::Maintenance { .. }) if never_configured => {}
                    Err(TalosError::Maintenance { .. }) => {
                        return Err(untrusted(IN_MAINTENANCE));
                    }
                    Err(TalosError::WrongCa { .. }) => {
                        return Err(untrusted(FOREIGN_CA));
                    }
                    Err(other) => return Err(Retry::from(other)),
                }
                let maintenance = Trust::Maintenance {
                    pinned_spki_sha256: None,
                };
                let mut client = TalosClient::connect(&address, &maintenance).await?;
                client.apply_configuration(config, ApplyMode::Auto).await?;
                info!(node = %d.slot.name, "machine config applied in maintenance mode; installing");
                Ok(())
            }
        };
        // A node that never took a config has never answered: if it times
        // out, the likely causes are the ones of a first boot.
        if never_configured {
            wait::first_answer(self.deadline, &d.slot.name, step, attempt).await
        } else {
            wait::until(self.deadline, &d.slot.name, step, attempt).await
        }?;
        self.recorder.update(&d.slot.name, |node| {
            node.config_sha256 = Some(d.sha256.clone())
        });
        Ok(())
    }
}
