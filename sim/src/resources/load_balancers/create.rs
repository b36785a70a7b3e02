//! Creating a load balancer (with services, targets and a network it is
//! attached to at once), renaming or relabelling it, deleting it.

use axum::http::StatusCode;

use super::{Algorithm, LoadBalancer, LoadBalancerSpec};
use crate::actions::{Completion, NewAction};
use crate::catalog::location;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::labels::Labels;
use crate::load_balancer_types::load_balancer_type;
use crate::resources::primary_ips::IpType;
use crate::resources::{check_name, checked_labels};
use crate::state::World;

impl World {
    pub fn load_balancer(&self, id: Id) -> Result<&LoadBalancer, ApiError> {
        self.load_balancers
            .get(&id)
            .ok_or_else(|| ApiError::not_found("load_balancer", id))
    }

    pub fn load_balancer_mut(&mut self, id: Id) -> Result<&mut LoadBalancer, ApiError> {
        self.load_balancers
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("load_balancer", id))
    }

    /// A load balancer no running action holds.
    pub(super) fn actionable_load_balancer(&self, id: Id) -> Result<&LoadBalancer, ApiError> {
        let lb = self.load_balancer(id)?;
        self.ensure_unlocked(ResourceRef::load_balancer(id))?;
        Ok(lb)
    }

    fn check_load_balancer_name(&self, name: &str, except: Option<Id>) -> Result<(), ApiError> {
        check_name(name)?;
        if self
            .load_balancers
            .values()
            .any(|lb| Some(lb.id) != except && lb.name == name)
        {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        Ok(())
    }

    /// `POST /load_balancers`: the load balancer and its
    /// `create_load_balancer` action. Services, targets and a network given
    /// here are checked as their own actions check them.
    pub fn create_load_balancer(
        &mut self,
        spec: LoadBalancerSpec,
        now: Timestamp,
    ) -> Result<(Id, Id), ApiError> {
        self.check_load_balancer_name(&spec.name, None)?;
        let labels = checked_labels(spec.labels)?;
        let kind = load_balancer_type(&spec.load_balancer_type).ok_or_else(|| {
            ApiError::field(
                "load_balancer_type",
                format!("unknown load balancer type '{}'", spec.load_balancer_type),
            )
        })?;
        let place = match (&spec.location, &spec.network_zone) {
            (Some(name), _) => location(name)
                .ok_or_else(|| ApiError::field("location", format!("unknown location '{name}'")))?,
            (None, Some(zone)) => crate::catalog::LOCATIONS
                .iter()
                .find(|l| l.network_zone == zone && kind.sold_at(l.name))
                .ok_or_else(|| {
                    ApiError::field("network_zone", format!("unknown network zone '{zone}'"))
                })?,
            (None, None) => {
                return Err(ApiError::field(
                    "location",
                    "give a location or a network_zone",
                ));
            }
        };
        if !kind.sold_at(place.name) {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unsupported_location_for_load_balancer_type",
                format!(
                    "load balancer type {} is not available in location {}",
                    kind.name, place.name
                ),
            ));
        }
        let algorithm = match spec.algorithm.as_deref() {
            None => Algorithm::RoundRobin,
            Some(text) => Algorithm::parse(text, "algorithm.type")?,
        };
        let services = super::services::checked_services(&spec.services, kind.max_services)?;
        let public_ipv4 = self.free_public_address(IpType::Ipv4)?;
        let public_ipv6 = self.free_public_address(IpType::Ipv6)?;
        let id = self.next_id(Some(ResourceKind::LoadBalancer));
        let mut lb = LoadBalancer {
            id,
            name: spec.name,
            labels,
            created: now,
            load_balancer_type: kind.name.to_string(),
            location: place.name.to_string(),
            algorithm,
            public_enabled: spec.public_interface.unwrap_or(true),
            public_ipv4,
            public_ipv6,
            private_net: Vec::new(),
            services,
            targets: Vec::new(),
            delete_protected: false,
        };
        if let Some(network) = spec.network {
            let ip = self.load_balancer_ip(&lb, network, None, None)?;
            lb.private_net.push(super::LoadBalancerNet { network, ip });
        }
        World::check_interfaces(&lb)?;
        for target in &spec.targets {
            let checked = self.checked_target(&lb, target, kind.max_targets)?;
            lb.targets.push(checked);
        }
        self.load_balancers.insert(id, lb);
        let mut action = NewAction::on(
            "create_load_balancer",
            ResourceRef::load_balancer(id),
            Completion::Nothing,
        );
        if let Some(network) = spec.network {
            action = action.also(ResourceRef::network(network));
        }
        Ok((id, self.start_action(action, now)))
    }

    pub fn update_load_balancer(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
    ) -> Result<(), ApiError> {
        self.load_balancer(id)?;
        if let Some(name) = &name {
            self.check_load_balancer_name(name, Some(id))?;
        }
        let labels = labels.map(checked_labels).transpose()?;
        let lb = self.load_balancer_mut(id)?;
        if let Some(name) = name {
            lb.name = name;
        }
        if let Some(labels) = labels {
            lb.labels = labels;
        }
        Ok(())
    }

    /// Gone at once; the answer carries a `delete_load_balancer` action,
    /// as Hetzner's clients read it.
    pub fn delete_load_balancer(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        if self.load_balancer(id)?.delete_protected {
            return Err(ApiError::Protected {
                kind: "load_balancer",
            });
        }
        self.ensure_unlocked(ResourceRef::load_balancer(id))?;
        self.load_balancers.remove(&id);
        let mut action = NewAction::on(
            "delete_load_balancer",
            ResourceRef::load_balancer(id),
            Completion::Nothing,
        );
        action.locks.clear();
        Ok(self.start_action(action, now))
    }

    /// `change_protection`: delete protection on or off.
    pub fn protect_load_balancer(
        &mut self,
        id: Id,
        delete: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        self.actionable_load_balancer(id)?;
        self.load_balancer_mut(id)?.delete_protected = delete;
        Ok(self.start_action(
            NewAction::on(
                "change_protection",
                ResourceRef::load_balancer(id),
                Completion::Nothing,
            ),
            now,
        ))
    }
}
