//! Changing what a load balancer is: its type (`change_type`, refused
//! when the new type has room for fewer services or targets than it has;
//! the type changes when the action ends) and its algorithm
//! (`change_algorithm`).

use axum::http::StatusCode;

use super::Algorithm;
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::load_balancer_types::load_balancer_type;
use crate::state::World;

fn invalid_type(message: String) -> ApiError {
    ApiError::operation(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_load_balancer_type",
        message,
    )
}

impl World {
    /// `change_type` to `wanted` (an ID or a name): the action
    /// `change_load_balancer_type`, at whose end the type is the new one.
    pub fn change_load_balancer_type(
        &mut self,
        id: Id,
        wanted: &str,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        let kind = load_balancer_type(wanted).ok_or_else(|| {
            ApiError::field(
                "load_balancer_type",
                format!("unknown load balancer type '{wanted}'"),
            )
        })?;
        if !kind.sold_at(&lb.location) {
            return Err(invalid_type(format!(
                "load balancer type {} is not available in location {}",
                kind.name, lb.location
            )));
        }
        if lb.services.len() > kind.max_services {
            return Err(invalid_type(format!(
                "load balancer type {} allows {} services, the load balancer has {}",
                kind.name,
                kind.max_services,
                lb.services.len()
            )));
        }
        if lb.targets.len() > kind.max_targets {
            return Err(invalid_type(format!(
                "load balancer type {} allows {} targets, the load balancer has {}",
                kind.name,
                kind.max_targets,
                lb.targets.len()
            )));
        }
        let action = NewAction::on(
            "change_load_balancer_type",
            ResourceRef::load_balancer(id),
            Completion::LoadBalancerTypeChanged {
                load_balancer: id,
                load_balancer_type: kind.name.to_string(),
            },
        );
        Ok(self.start_action(action, now))
    }

    /// The end of `change_load_balancer_type`.
    pub(crate) fn finish_load_balancer_type_change(&mut self, id: Id, load_balancer_type: String) {
        if let Some(lb) = self.load_balancers.get_mut(&id) {
            lb.load_balancer_type = load_balancer_type;
        }
    }

    /// `change_algorithm`: `round_robin` or `least_connections`.
    pub fn change_load_balancer_algorithm(
        &mut self,
        id: Id,
        algorithm: &str,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        self.actionable_load_balancer(id)?;
        let algorithm = Algorithm::parse(algorithm, "type")?;
        self.load_balancer_mut(id)?.algorithm = algorithm;
        Ok(self.load_balancer_action(id, "change_algorithm", now))
    }

    /// An action on the load balancer alone that holds it while it runs.
    pub(super) fn load_balancer_action(
        &mut self,
        id: Id,
        command: &'static str,
        now: Timestamp,
    ) -> Id {
        self.start_action(
            NewAction::on(command, ResourceRef::load_balancer(id), Completion::Nothing),
            now,
        )
    }
}

impl Algorithm {
    pub(super) fn parse(text: &str, field: &str) -> Result<Self, ApiError> {
        match text {
            "round_robin" => Ok(Self::RoundRobin),
            "least_connections" => Ok(Self::LeastConnections),
            other => Err(ApiError::field(
                field,
                format!("unknown algorithm '{other}'"),
            )),
        }
    }
}
