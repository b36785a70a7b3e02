//! Where a load balancer forwards: targets (one server, or every server a
//! label selector matches, at its public or its private IP), with the
//! servers each target stands for now.

use axum::http::StatusCode;

use super::{LoadBalancer, Target, TargetKind, TargetSpec};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::Id;
use crate::labels::Selector;
use crate::load_balancer_types::load_balancer_type;
use crate::state::World;

fn max_targets(lb: &LoadBalancer) -> usize {
    load_balancer_type(&lb.load_balancer_type).map_or(0, |t| t.max_targets)
}

impl World {
    /// The servers `target` stands for now, by ID. Private targets are the
    /// servers on the load balancer's network.
    pub fn target_servers(&self, lb: &LoadBalancer, target: &Target) -> Vec<Id> {
        let reachable = |id: Id| {
            !target.use_private_ip
                || self.servers.get(&id).is_some_and(|s| {
                    s.private_net
                        .iter()
                        .any(|p| lb.private_ip_in(p.network).is_some())
                })
        };
        match &target.kind {
            TargetKind::Server { server } => vec![*server],
            TargetKind::LabelSelector { selector } => match Selector::parse(selector) {
                Ok(selector) => self
                    .servers
                    .values()
                    .filter(|s| selector.matches(&s.labels))
                    .map(|s| s.id)
                    .filter(|id| reachable(*id))
                    .collect(),
                Err(_) => Vec::new(),
            },
        }
    }

    pub(super) fn checked_target(
        &self,
        lb: &LoadBalancer,
        spec: &TargetSpec,
        limit: usize,
    ) -> Result<Target, ApiError> {
        if spec.use_private_ip && lb.private_net.is_empty() {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "load_balancer_not_attached_to_network",
                "a target with use_private_ip needs the load balancer on a network",
            ));
        }
        if !spec.use_private_ip && !lb.public_enabled {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "load_balancer_public_interface_disabled",
                "a public target needs the load balancer's public interface",
            ));
        }
        let kind = match spec.kind.as_str() {
            "server" => {
                let id = spec
                    .server
                    .ok_or_else(|| ApiError::field("server", "is required for type 'server'"))?;
                let server = self.server(id)?;
                if spec.use_private_ip
                    && !server
                        .private_net
                        .iter()
                        .any(|p| lb.private_ip_in(p.network).is_some())
                {
                    return Err(ApiError::operation(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "server_not_attached_to_network",
                        format!("server {id} is not on the load balancer's network"),
                    ));
                }
                TargetKind::Server { server: id }
            }
            "label_selector" => {
                let selector = spec.selector.clone().ok_or_else(|| {
                    ApiError::field("label_selector", "is required for type 'label_selector'")
                })?;
                Selector::parse(&selector)
                    .map_err(|e| ApiError::field("label_selector.selector", e.reason))?;
                TargetKind::LabelSelector { selector }
            }
            "ip" => {
                return Err(ApiError::field(
                    "type",
                    "IP targets are not emulated by hct-sim",
                ));
            }
            other => {
                return Err(ApiError::field(
                    "type",
                    format!("unknown target type '{other}'"),
                ));
            }
        };
        if lb.targets.iter().any(|t| t.kind == kind) {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_already_defined",
                "the target is already defined",
            ));
        }
        if lb.targets.len() >= limit {
            return Err(super::services::too_many("targets", limit));
        }
        Ok(Target {
            kind,
            use_private_ip: spec.use_private_ip,
        })
    }

    pub fn add_load_balancer_target(
        &mut self,
        id: Id,
        spec: &TargetSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        let target = self.checked_target(lb, spec, max_targets(lb))?;
        self.load_balancer_mut(id)?.targets.push(target);
        Ok(self.load_balancer_action(id, "add_target", now))
    }

    pub fn remove_load_balancer_target(
        &mut self,
        id: Id,
        spec: &TargetSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        self.actionable_load_balancer(id)?;
        let kind = match (spec.kind.as_str(), spec.server, &spec.selector) {
            ("server", Some(server), _) => TargetKind::Server { server },
            ("label_selector", _, Some(selector)) => TargetKind::LabelSelector {
                selector: selector.clone(),
            },
            _ => return Err(ApiError::field("type", "name a server or a label selector")),
        };
        let lb = self.load_balancer_mut(id)?;
        let before = lb.targets.len();
        lb.targets.retain(|t| t.kind != kind);
        if lb.targets.len() == before {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_not_found",
                "the load balancer has no such target",
            ));
        }
        Ok(self.load_balancer_action(id, "remove_target", now))
    }
}
