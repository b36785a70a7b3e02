//! Creating a network (with its first subnets and routes), renaming or
//! relabelling it, and deleting it, which detaches its servers.

use super::ranges::parse_network_range;
use super::{Network, RouteSpec, SubnetSpec};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::events::SimEvent;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::labels::Labels;
use crate::resources::{check_name, checked_labels};
use crate::state::World;

impl World {
    #[allow(clippy::too_many_arguments)]
    pub fn create_network(
        &mut self,
        name: String,
        ip_range: &str,
        subnets: Vec<SubnetSpec>,
        routes: Vec<RouteSpec>,
        labels: Labels,
        expose_routes_to_vswitch: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        check_name(&name)?;
        let labels = checked_labels(labels)?;
        let ip_range = parse_network_range(ip_range).map_err(|m| ApiError::field("ip_range", m))?;
        if self.networks.values().any(|n| n.name == name) {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        let mut network = Network {
            id: 0,
            name,
            ip_range,
            subnets: Vec::new(),
            routes: Vec::new(),
            labels,
            delete_protected: false,
            expose_routes_to_vswitch,
            created: now,
        };
        for spec in &subnets {
            let subnet = self.check_subnet(&network, spec, &network.subnets)?;
            network.subnets.push(subnet);
        }
        for spec in &routes {
            let route = self.check_route(&network, spec)?;
            network.routes.push(route);
        }
        network.id = self.next_id(Some(ResourceKind::Network));
        let id = network.id;
        self.networks.insert(id, network);
        Ok(id)
    }

    pub fn update_network(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
        expose_routes_to_vswitch: Option<bool>,
    ) -> Result<(), ApiError> {
        self.network(id)?;
        if let Some(name) = &name {
            check_name(name)?;
            if self
                .networks
                .values()
                .any(|n| n.id != id && &n.name == name)
            {
                return Err(ApiError::Uniqueness { field: "name" });
            }
        }
        let labels = labels.map(checked_labels).transpose()?;
        let network = self.network_mut(id)?;
        if let Some(name) = name {
            network.name = name;
        }
        if let Some(labels) = labels {
            network.labels = labels;
        }
        if let Some(expose) = expose_routes_to_vswitch {
            network.expose_routes_to_vswitch = expose;
        }
        Ok(())
    }

    /// Deleting a network detaches whatever is attached to it.
    pub fn delete_network(&mut self, id: Id) -> Result<(), ApiError> {
        if self.network(id)?.delete_protected {
            return Err(ApiError::Protected { kind: "network" });
        }
        self.ensure_unlocked(ResourceRef::network(id))?;
        self.networks.remove(&id);
        let mut detached = Vec::new();
        for server in self.servers.values_mut() {
            if let Some(p) = server.private_net.iter().find(|p| p.network == id) {
                detached.push((server.id, p.ip));
            }
            server.private_net.retain(|p| p.network != id);
        }
        for lb in self.load_balancers.values_mut() {
            lb.private_net.retain(|p| p.network != id);
            if lb.private_net.is_empty() {
                lb.public_enabled = true;
            }
        }
        for (server, ip) in detached {
            self.emit(SimEvent::DetachedFromNetwork {
                server,
                network: id,
                ip,
            });
        }
        Ok(())
    }

    /// `change_protection`: the network's delete protection.
    pub fn protect_network(
        &mut self,
        id: Id,
        delete: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        self.ensure_unlocked(ResourceRef::network(id))?;
        self.network_mut(id)?.delete_protected = delete;
        Ok(self.start_action(
            NewAction::on(
                "change_protection",
                ResourceRef::network(id),
                Completion::Nothing,
            ),
            now,
        ))
    }
}
