//! The servers of one group (the control plane or a worker pool): make
//! Hetzner match the plan. Create what is missing (adopting servers of ours
//! that exist but are not in state), remove surplus nodes highest index
//! first, restore labels, and re-apply changed machine configs one node at a
//! time. Every server is recorded the moment it exists or is gone.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use tracing::{info, warn};

use super::ClusterError;
use super::naming;
use super::settings::{ClusterSettings, ConfigDelivery, NodeTraits, config_sha256};
use super::slots::{self, NodeSlot};
use super::wait::{self, Deadline, Retry};
use super::{bring_up, upgrade};
use crate::hcloud::models::{Labels, Server};
use crate::hcloud::{Client, PrivateServer};
use crate::network_plan::MAX_SERVERS_PER_NETWORK;
use crate::talos::api::{ApplyMode, NodeAddress, TalosClient, TalosError, Trust};
use crate::talos::{MachineConfig, Role};

/// How long a node may take to leave the cluster gracefully before its
/// server is deleted anyway (an unreachable node must not block scale-down).
const GRACEFUL_RESET_TIMEOUT: Duration = Duration::from_secs(120);

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
}

impl GroupSpec {
    fn role_label(&self) -> &'static str {
        match self.role {
            Role::ControlPlane => "control-plane",
            Role::Worker => "worker",
        }
    }
}

/// A node as state records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    pub name: String,
    pub server_id: i64,
    pub ip: String,
    /// SHA-256 of the machine config the node was given; None when unknown
    /// (an adopted server), which makes the next apply re-apply it.
    pub config_sha256: Option<String>,
}

/// The group's nodes as they are right now, shared with whoever must save
/// them if the operation fails half-way (partial state).
#[derive(Debug, Clone, Default)]
pub struct Recorder(Arc<Mutex<BTreeMap<(u32, String), NodeRecord>>>);

impl Recorder {
    pub fn new(cluster: &str, group: &str, nodes: Vec<NodeRecord>) -> Self {
        let recorder = Self::default();
        for node in nodes {
            recorder.put(cluster, group, node);
        }
        recorder
    }

    /// Records (or replaces) a node.
    pub fn put(&self, cluster: &str, group: &str, node: NodeRecord) {
        let index = naming::node_index(cluster, group, &node.name).unwrap_or(u32::MAX);
        let mut nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        nodes.retain(|(_, name), _| *name != node.name);
        nodes.insert((index, node.name.clone()), node);
    }

    pub fn remove(&self, name: &str) {
        let mut nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        nodes.retain(|(_, n), _| n != name);
    }

    fn update(&self, name: &str, change: impl FnOnce(&mut NodeRecord)) {
        let mut nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = nodes.values_mut().find(|n| n.name == name) {
            change(node);
        }
    }

    /// The nodes by index.
    pub fn nodes(&self) -> Vec<NodeRecord> {
        let nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        nodes.values().cloned().collect()
    }

    fn node(&self, name: &str) -> Option<NodeRecord> {
        self.nodes().into_iter().find(|n| n.name == name)
    }
}

/// Everything a group operation needs.
pub struct Group<'a> {
    pub settings: &'a ClusterSettings,
    pub spec: &'a GroupSpec,
    pub client: &'a Client,
    /// SOCKS5 proxy into the private network, if hct runs outside it.
    pub proxy: Option<SocketAddr>,
    pub trust: &'a Trust,
    pub deadline: &'a Deadline,
    pub recorder: &'a Recorder,
}

/// A slot with the config its node should run.
struct Desired {
    slot: NodeSlot,
    config: MachineConfig,
    sha256: String,
}

impl Group<'_> {
    fn cluster(&self) -> &str {
        &self.settings.cluster_name
    }

    fn group(&self) -> &str {
        &self.spec.group
    }

    pub fn address(&self, ip: &str) -> Result<NodeAddress, ClusterError> {
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| ClusterError::Conflict(format!("{ip:?} is not an IP address")))?;
        Ok(NodeAddress::new(ip, self.proxy))
    }

    /// The machine configs of `slots`, made before anything is touched so a
    /// bad patch fails without side effects.
    fn desired(&self, slots: &[NodeSlot]) -> Result<Vec<Desired>, ClusterError> {
        slots
            .iter()
            .map(|slot| {
                let config = self
                    .settings
                    .node_config(&slot.name, self.spec.role, &self.spec.traits)
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
    async fn existing(&self) -> Result<BTreeMap<String, Server>, ClusterError> {
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

    /// Makes the group match `slots`. Returns the names of the nodes it
    /// created (which the caller waits for).
    pub async fn converge(&self, slots: &[NodeSlot]) -> Result<Vec<String>, ClusterError> {
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

        // Servers of ours that state does not know and whose config holds
        // other secrets (a run killed before Terraform saved them) can never
        // join: replace them.
        let fingerprint = self.settings.secrets_fingerprint();
        let recorded = self.recorder.nodes();
        let stale: Vec<Server> = existing
            .values()
            .filter(|s| !recorded.iter().any(|n| n.server_id == s.id))
            .filter(|s| s.labels.get(naming::SECRETS) != Some(&fingerprint))
            .cloned()
            .collect();
        for server in stale {
            warn!(node = %server.name, "server left by an interrupted run with other secrets; replacing it");
            self.delete_server(&server).await?;
            existing.remove(&server.name);
        }

        self.remove_surplus(&desired, &mut existing).await?;
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
        let mut created_names = Vec::new();
        for result in created {
            created_names.push(result?);
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
        if !resizing.is_empty() {
            self.check_disks_fit(&resizing).await?;
            for server in resizing {
                if let Some(node) = self.recorder.node(&server.name) {
                    self.change_server_type(server, &node).await?;
                }
            }
        }
        // One node at a time, so a bad config never takes down more than one.
        for d in &desired {
            if let Some(node) = self.recorder.node(&d.slot.name)
                && node.config_sha256.as_deref() != Some(d.sha256.as_str())
            {
                // A new talos_version changes every config (its installer
                // image): the node moves to that release before it gets the
                // config made for it.
                upgrade::to_release(self, &node).await?;
                info!(node = %node.name, "machine config changed; applying it");
                self.apply_config(d, &node.ip).await?;
            }
        }
        self.remove_spare_placement_groups(
            &groups,
            slots::placement_groups_for(slots.len() as u32),
        )
        .await?;
        Ok(created_names)
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
            ip: d.slot.ip.to_string(),
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
            .create_private_server(&spec, self.deadline.left(), |server| {
                self.recorder.put(
                    self.cluster(),
                    self.group(),
                    NodeRecord {
                        name: server.name.clone(),
                        server_id: server.id,
                        ip: d.slot.ip.to_string(),
                        config_sha256: recorded_sha.clone(),
                    },
                );
            })
            .await
            .map_err(ClusterError::hcloud(format!(
                "creating server {}",
                d.slot.name
            )))?;
        if needs_apply {
            self.apply_config(d, &d.slot.ip.to_string()).await?;
        }
        Ok(d.slot.name.clone())
    }

    /// Gives the node its config: over mTLS when it is configured (Talos
    /// applies without reboot where it can), in maintenance mode otherwise.
    async fn apply_config(&self, d: &Desired, ip: &str) -> Result<(), ClusterError> {
        let address = self.address(ip)?;
        let config = d.config.as_str().as_bytes();
        wait::until(self.deadline, &d.slot.name, "applying the machine config", || {
            let address = address.clone();
            async move {
                match TalosClient::connect(&address, self.trust).await {
                    Ok(mut client) => {
                        let applied = client.apply_configuration(config, ApplyMode::Auto).await?;
                        info!(node = %d.slot.name, mode = %applied.mode, "machine config applied");
                        return Ok(());
                    }
                    Err(TalosError::Maintenance { .. }) => {}
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
        })
        .await?;
        self.recorder.update(&d.slot.name, |node| {
            node.config_sha256 = Some(d.sha256.clone())
        });
        Ok(())
    }

    fn wanted_labels(&self) -> Labels {
        naming::server_labels(
            self.cluster(),
            self.group(),
            self.spec.role_label(),
            &self.settings.secrets_fingerprint(),
            &self.spec.server_labels,
        )
    }

    /// Disks cannot shrink: refuses the group's server type before any of
    /// `servers` goes down if its disk is smaller than one of theirs.
    async fn check_disks_fit(&self, servers: &[&Server]) -> Result<(), ClusterError> {
        let wanted = self.spec.server_type.as_str();
        let Some(target) = self
            .client
            .server_type(wanted)
            .await
            .map_err(ClusterError::hcloud(format!(
                "reading server type {wanted}"
            )))?
        else {
            return Ok(());
        };
        match servers.iter().find(|s| s.primary_disk_size > target.disk) {
            None => Ok(()),
            Some(server) => Err(ClusterError::Refused {
                summary: "Server type too small",
                detail: format!(
                    "{} cannot become {wanted}: its disk is {} GB and {wanted} has {} GB, and \
                     Hetzner cannot shrink disks. Nothing was changed. Pick a server type with \
                     at least {} GB of disk.",
                    server.name, server.primary_disk_size, target.disk, server.primary_disk_size
                ),
            }),
        }
    }

    /// Moves a node to the group's server type and keeps its server (id, IP,
    /// disk): ACPI shutdown, `change_type` with the disk left at its size
    /// (Hetzner starts the server again afterwards), then back in service.
    /// Whatever fails after the shutdown, the server is powered on again.
    async fn change_server_type(
        &self,
        server: &Server,
        node: &NodeRecord,
    ) -> Result<(), ClusterError> {
        let (client, name) = (self.client, server.name.as_str());
        let wanted = self.spec.server_type.as_str();
        info!(node = name, from = %server.server_type.name, to = wanted, "changing the server type");
        client
            .shut_down(server.id, name, self.deadline.left())
            .await
            .map_err(ClusterError::hcloud(format!("shutting down {name}")))?;
        let doing = format!("changing the server type of {name} to {wanted}");
        let changed = async {
            let action = client.change_type(server.id, wanted, false).await?;
            client
                .wait_for_action(action, &doing, self.deadline.left())
                .await?;
            Ok(())
        }
        .await;
        // Started again by Hetzner after a change; after a failure it is off.
        let powered = self.power_on_if_off(server.id, name).await;
        changed.map_err(ClusterError::hcloud(&doing))?;
        powered?;
        bring_up::back_in_service(self, node).await?;
        info!(
            node = name,
            server_type = wanted,
            "back in service on the new server type"
        );
        Ok(())
    }

    async fn power_on_if_off(&self, server: i64, name: &str) -> Result<(), ClusterError> {
        let doing = format!("powering on {name}");
        let status = self
            .client
            .server(server)
            .await
            .map_err(ClusterError::hcloud(&doing))?
            .map(|s| s.status);
        if status.as_deref() != Some("off") {
            return Ok(());
        }
        // Also after Ctrl-C or the deadline: a node left off is worse than
        // a wait that overruns by one action.
        let action = self
            .client
            .power_on(server)
            .await
            .map_err(ClusterError::hcloud(&doing))?;
        self.client
            .wait_for_action(action, &doing, self.deadline.left())
            .await
            .map_err(ClusterError::hcloud(&doing))?;
        Ok(())
    }

    async fn restore_labels(&self, server: &Server) -> Result<(), ClusterError> {
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

    /// Servers of this group that the plan no longer has: highest index
    /// first, each leaves the cluster gracefully, then its server goes.
    async fn remove_surplus(
        &self,
        desired: &[Desired],
        existing: &mut BTreeMap<String, Server>,
    ) -> Result<(), ClusterError> {
        let mut surplus: Vec<(u32, Server)> = existing
            .values()
            .filter(|s| !desired.iter().any(|d| d.slot.name == s.name))
            .map(|s| {
                let index =
                    naming::node_index(self.cluster(), self.group(), &s.name).unwrap_or(u32::MAX);
                (index, s.clone())
            })
            .collect();
        surplus.sort_by_key(|(index, _)| std::cmp::Reverse(*index));
        for (_, server) in surplus {
            self.remove_node(&server).await?;
            existing.remove(&server.name);
        }
        Ok(())
    }

    /// A graceful Talos reset (leaves etcd, cordons and drains), then the
    /// server's deletion. A node that cannot be reached is deleted anyway.
    pub async fn remove_node(&self, server: &Server) -> Result<(), ClusterError> {
        if let Some(ip) = server.private_ip(self.settings.network_id) {
            let address = self.address(ip)?;
            let reset = async {
                let mut client = TalosClient::connect(&address, self.trust).await?;
                client.reset(true).await
            };
            match tokio::time::timeout(GRACEFUL_RESET_TIMEOUT.min(self.deadline.left()), reset)
                .await
            {
                Ok(Ok(())) => info!(node = %server.name, "node reset gracefully"),
                Ok(Err(e)) => {
                    warn!(node = %server.name, "graceful reset failed ({e}); deleting the server anyway")
                }
                Err(_) => {
                    warn!(node = %server.name, "graceful reset timed out; deleting the server anyway")
                }
            }
        }
        self.delete_server(server).await
    }

    async fn delete_server(&self, server: &Server) -> Result<(), ClusterError> {
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

    /// Deletes every server and placement group of the group, without
    /// resetting nodes (the whole cluster goes).
    pub async fn destroy(&self) -> Result<(), ClusterError> {
        let existing = self.existing().await?;
        let results = join_all(existing.values().map(|s| self.delete_server(s))).await;
        for result in results {
            result?;
        }
        for node in self.recorder.nodes() {
            self.recorder.remove(&node.name);
        }
        let groups = self.placement_groups().await?;
        self.remove_spare_placement_groups(&groups, 0).await
    }

    /// This group's placement groups by number.
    async fn placement_groups(&self) -> Result<BTreeMap<u32, i64>, ClusterError> {
        let groups = self
            .client
            .placement_groups(&naming::group_selector(self.cluster(), self.group()))
            .await
            .map_err(ClusterError::hcloud("listing placement groups"))?;
        Ok(groups
            .into_iter()
            .filter_map(|g| {
                let k = (1..=slots::placement_groups_for(MAX_SERVERS_PER_NETWORK)).find(|k| {
                    naming::placement_group_name(self.cluster(), self.group(), *k) == g.name
                })?;
                Some((k, g.id))
            })
            .collect())
    }

    /// Placement groups 1..=count, created where missing.
    async fn ensure_placement_groups(
        &self,
        count: u32,
    ) -> Result<BTreeMap<u32, i64>, ClusterError> {
        let mut groups = self.placement_groups().await?;
        for k in 1..=count {
            if groups.contains_key(&k) {
                continue;
            }
            let name = naming::placement_group_name(self.cluster(), self.group(), k);
            info!(placement_group = %name, "creating spread placement group");
            let group = self
                .client
                .create_spread_group(&name, &naming::group_labels(self.cluster(), self.group()))
                .await
                .map_err(ClusterError::hcloud(format!(
                    "creating placement group {name}"
                )))?;
            groups.insert(k, group.id);
        }
        Ok(groups)
    }

    /// Deletes placement groups numbered above `keep` (empty after scale-down).
    async fn remove_spare_placement_groups(
        &self,
        groups: &BTreeMap<u32, i64>,
        keep: u32,
    ) -> Result<(), ClusterError> {
        for (k, id) in groups.range(keep + 1..) {
            info!(placement_group = k, id, "deleting placement group");
            self.client
                .delete_placement_group(*id)
                .await
                .map_err(ClusterError::hcloud("deleting a placement group"))?;
        }
        Ok(())
    }

    /// The ids of the group's placement groups, in order.
    pub async fn placement_group_ids(&self) -> Result<Vec<i64>, ClusterError> {
        Ok(self.placement_groups().await?.into_values().collect())
    }
}
