//! The emulated project: every resource, every action, and the ID counters.
//! One `World` sits behind one lock; handlers take it, change it and let go.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::actions::Action;
use crate::clock::Timestamp;
use crate::durations::Durations;
use crate::errors::ApiError;
use crate::events::SimEvent;
use crate::faults::ActionFailure;
use crate::resources::firewalls::Firewall;
use crate::resources::images::Image;
use crate::resources::load_balancers::LoadBalancer;
use crate::resources::networks::Network;
use crate::resources::placement_groups::PlacementGroup;
use crate::resources::primary_ips::PrimaryIp;
use crate::resources::servers::Server;
use crate::resources::ssh_keys::SshKey;
use crate::talos::faults::TalosFault;

// Live in the leaf `ids`; re-exported for the `state::Id` paths.
pub use crate::ids::{Id, ResourceKind, ResourceRef};

/// Next IDs per kind. Each kind counts from its own base so that an ID
/// passed to the wrong endpoint is a 404 rather than a lucky hit.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IdCounters {
    server: Id,
    network: Id,
    image: Id,
    ssh_key: Id,
    placement_group: Id,
    action: Id,
    /// Absent from states saved before firewalls were emulated.
    #[serde(default = "first_firewall_id")]
    firewall: Id,
    #[serde(default = "first_primary_ip_id")]
    primary_ip: Id,
    #[serde(default = "first_load_balancer_id")]
    load_balancer: Id,
}

fn first_load_balancer_id() -> Id {
    4_400_001
}

fn first_primary_ip_id() -> Id {
    42_000_001
}

fn first_firewall_id() -> Id {
    1_300_001
}

impl Default for IdCounters {
    fn default() -> Self {
        Self {
            server: 5_000_001,
            network: 2_000_001,
            image: 300_000_001,
            ssh_key: 9_000_001,
            placement_group: 700_001,
            action: 80_000_001,
            firewall: first_firewall_id(),
            primary_ip: first_primary_ip_id(),
            load_balancer: first_load_balancer_id(),
        }
    }
}

/// Settings that shape behaviour but are not project state (never saved).
#[derive(Debug, Clone, Default)]
pub struct WorldConfig {
    pub durations: Durations,
    /// Actions that are to end in an error; consumed as actions start.
    pub action_failures: Vec<ActionFailure>,
    /// Faults of the emulated Talos nodes.
    pub talos_faults: Vec<TalosFault>,
    /// Faults of the emulated rescue systems.
    pub rescue_faults: Vec<crate::rescue::RescueFault>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct World {
    pub servers: BTreeMap<Id, Server>,
    pub networks: BTreeMap<Id, Network>,
    pub images: BTreeMap<Id, Image>,
    pub ssh_keys: BTreeMap<Id, SshKey>,
    pub placement_groups: BTreeMap<Id, PlacementGroup>,
    #[serde(default)]
    pub firewalls: BTreeMap<Id, Firewall>,
    #[serde(default)]
    pub primary_ips: BTreeMap<Id, PrimaryIp>,
    /// Absent from states saved before load balancers were emulated.
    #[serde(default)]
    pub load_balancers: BTreeMap<Id, LoadBalancer>,
    pub actions: BTreeMap<Id, Action>,
    next_id: IdCounters,
    #[serde(skip)]
    pub config: WorldConfig,
    /// The Kubernetes objects of each cluster (what etcd holds), saved
    /// with the world so a restarted emulator serves them again.
    #[serde(default)]
    pub kube: crate::kube::Stores,
    /// etcd members of servers deleted without leaving etcd
    /// (`talos::etcd`), listed until removed.
    #[serde(default)]
    pub etcd_gone: Vec<crate::talos::node::GoneMember>,
    /// Each cluster's members when `talos::etcd::watch` last looked.
    #[serde(skip)]
    pub(crate) etcd_seen: std::collections::BTreeMap<String, Vec<crate::talos::node::MemberView>>,
    /// Events since the owner last drained them.
    #[serde(skip)]
    pub(crate) events: Vec<SimEvent>,
    /// Every Talos API call the nodes took (`talos::call_log`).
    #[serde(skip)]
    pub talos_calls: Vec<crate::talos::call_log::TalosCall>,
}

impl World {
    pub fn new(config: WorldConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    pub(crate) fn next_id(&mut self, kind: Option<ResourceKind>) -> Id {
        let counter = match kind {
            Some(ResourceKind::Server) => &mut self.next_id.server,
            Some(ResourceKind::Network) => &mut self.next_id.network,
            Some(ResourceKind::Image) => &mut self.next_id.image,
            Some(ResourceKind::SshKey) => &mut self.next_id.ssh_key,
            Some(ResourceKind::PlacementGroup) => &mut self.next_id.placement_group,
            Some(ResourceKind::Firewall) => &mut self.next_id.firewall,
            Some(ResourceKind::PrimaryIp) => &mut self.next_id.primary_ip,
            Some(ResourceKind::LoadBalancer) => &mut self.next_id.load_balancer,
            None => &mut self.next_id.action,
        };
        let id = *counter;
        *counter += 1;
        id
    }

    pub(crate) fn emit(&mut self, event: SimEvent) {
        self.events.push(event);
    }

    pub fn drain_events(&mut self) -> Vec<SimEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn server(&self, id: Id) -> Result<&Server, ApiError> {
        self.servers
            .get(&id)
            .ok_or_else(|| ApiError::not_found("server", id))
    }

    pub fn server_mut(&mut self, id: Id) -> Result<&mut Server, ApiError> {
        self.servers
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("server", id))
    }

    /// A server that may be acted on now: no running action holds it.
    pub(crate) fn actionable_server(&self, id: Id) -> Result<&Server, ApiError> {
        let server = self.server(id)?;
        self.ensure_unlocked(ResourceRef::server(id))?;
        Ok(server)
    }

    pub fn network(&self, id: Id) -> Result<&Network, ApiError> {
        self.networks
            .get(&id)
            .ok_or_else(|| ApiError::not_found("network", id))
    }

    pub fn network_mut(&mut self, id: Id) -> Result<&mut Network, ApiError> {
        self.networks
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("network", id))
    }

    pub fn image(&self, id: Id) -> Result<&Image, ApiError> {
        self.images
            .get(&id)
            .ok_or_else(|| ApiError::not_found("image", id))
    }

    pub fn image_mut(&mut self, id: Id) -> Result<&mut Image, ApiError> {
        self.images
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("image", id))
    }

    pub fn ssh_key(&self, id: Id) -> Result<&SshKey, ApiError> {
        self.ssh_keys
            .get(&id)
            .ok_or_else(|| ApiError::not_found("ssh_key", id))
    }

    pub fn placement_group(&self, id: Id) -> Result<&PlacementGroup, ApiError> {
        self.placement_groups
            .get(&id)
            .ok_or_else(|| ApiError::not_found("placement_group", id))
    }

    pub fn placement_group_mut(&mut self, id: Id) -> Result<&mut PlacementGroup, ApiError> {
        self.placement_groups
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("placement_group", id))
    }

    pub fn firewall(&self, id: Id) -> Result<&Firewall, ApiError> {
        self.firewalls
            .get(&id)
            .ok_or_else(|| ApiError::not_found("firewall", id))
    }

    pub fn firewall_mut(&mut self, id: Id) -> Result<&mut Firewall, ApiError> {
        self.firewalls
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("firewall", id))
    }

    pub fn primary_ip(&self, id: Id) -> Result<&PrimaryIp, ApiError> {
        self.primary_ips
            .get(&id)
            .ok_or_else(|| ApiError::not_found("primary_ip", id))
    }

    pub fn primary_ip_mut(&mut self, id: Id) -> Result<&mut PrimaryIp, ApiError> {
        self.primary_ips
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("primary_ip", id))
    }

    pub fn action(&self, id: Id) -> Result<&Action, ApiError> {
        self.actions
            .get(&id)
            .ok_or_else(|| ApiError::not_found("action", id))
    }

    /// Everything, as the admin endpoint shows it: the API's view of each
    /// resource plus what the API hides (user data, boot history, rescue).
    pub fn to_admin_json(&self, now: Timestamp) -> Value {
        let servers: Vec<Value> = self
            .servers
            .values()
            .map(|s| {
                let mut view = s.to_api(self, now);
                view["user_data"] = json!(s.user_data);
                view["ssh_keys"] = json!(s.ssh_keys);
                view["boot"] = json!(s.boot);
                view["talos"] = json!(s.talos);
                view["rescue"] = json!(s.rescue);
                view["disk"] = json!(s.disk);
                view
            })
            .collect();
        json!({
            "servers": servers,
            "networks": self.networks.values().map(|n| n.to_api(self)).collect::<Vec<_>>(),
            "images": self
                .images
                .values()
                .map(|i| {
                    let mut view = i.to_api(self);
                    view["content"] = json!(i.content);
                    view
                })
                .collect::<Vec<_>>(),
            "ssh_keys": self.ssh_keys.values().map(SshKey::to_api).collect::<Vec<_>>(),
            "placement_groups": self
                .placement_groups
                .values()
                .map(|p| p.to_api(self))
                .collect::<Vec<_>>(),
            "firewalls": self.firewalls.values().map(|f| f.to_api(self)).collect::<Vec<_>>(),
            "primary_ips": self.primary_ips.values().map(PrimaryIp::to_api).collect::<Vec<_>>(),
            "load_balancers": self
                .load_balancers
                .values()
                .map(|lb| lb.to_api(self, None))
                .collect::<Vec<_>>(),
            "actions": self.actions.values().map(|a| a.to_api(now)).collect::<Vec<_>>(),
        })
    }
}
