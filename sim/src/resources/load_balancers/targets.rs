//! What a load balancer forwards: TCP services with TCP health checks, and
//! targets (one server, or every server a label selector matches), with
//! the servers each target stands for now.

use axum::http::StatusCode;

use super::{
    HealthCheck, HealthCheckSpec, LoadBalancer, Service, ServiceSpec, Target, TargetKind,
    TargetSpec,
};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::labels::Selector;
use crate::load_balancer_types::load_balancer_type;
use crate::state::World;

fn port(value: Option<i64>, field: &str) -> Result<u16, ApiError> {
    let value = value.ok_or_else(|| ApiError::field(field, "is required"))?;
    u16::try_from(value)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError::field(field, format!("{value} is not a port (1 to 65535)")))
}

fn seconds(value: Option<i64>, field: &str, default: u32) -> Result<u32, ApiError> {
    match value {
        None => Ok(default),
        Some(v) => u32::try_from(v)
            .ok()
            .filter(|s| *s > 0)
            .ok_or_else(|| ApiError::field(field, format!("{v} must be a positive number"))),
    }
}

fn checked_health_check(
    spec: Option<&HealthCheckSpec>,
    destination: u16,
) -> Result<HealthCheck, ApiError> {
    let Some(spec) = spec else {
        return Ok(HealthCheck {
            port: destination,
            interval: 15,
            timeout: 10,
            retries: 3,
        });
    };
    if spec.protocol != "tcp" {
        return Err(ApiError::field(
            "health_check.protocol",
            format!(
                "'{}' health checks are not emulated by hct-sim (use 'tcp')",
                spec.protocol
            ),
        ));
    }
    Ok(HealthCheck {
        port: port(spec.port, "health_check.port")?,
        interval: seconds(spec.interval, "health_check.interval", 15)?,
        timeout: seconds(spec.timeout, "health_check.timeout", 10)?,
        retries: seconds(spec.retries, "health_check.retries", 3)?,
    })
}

pub(super) fn checked_service(spec: &ServiceSpec) -> Result<Service, ApiError> {
    if spec.protocol != "tcp" {
        return Err(ApiError::field(
            "protocol",
            format!(
                "'{}' services are not emulated by hct-sim (use 'tcp')",
                spec.protocol
            ),
        ));
    }
    let listen_port = port(spec.listen_port, "listen_port")?;
    let destination_port = port(spec.destination_port, "destination_port")?;
    Ok(Service {
        listen_port,
        destination_port,
        proxyprotocol: spec.proxyprotocol,
        health_check: checked_health_check(spec.health_check.as_ref(), destination_port)?,
    })
}

fn port_used(port: u16) -> ApiError {
    ApiError::operation(
        StatusCode::UNPROCESSABLE_ENTITY,
        "source_port_already_used",
        format!("listen port {port} is already used by a service"),
    )
}

fn too_many(what: &str, limit: usize) -> ApiError {
    ApiError::ResourceLimit(format!(
        "the load balancer type allows at most {limit} {what}"
    ))
}

pub(super) fn checked_services(
    specs: &[ServiceSpec],
    limit: usize,
) -> Result<Vec<Service>, ApiError> {
    let mut services: Vec<Service> = Vec::new();
    for spec in specs {
        let service = checked_service(spec)?;
        if services
            .iter()
            .any(|s| s.listen_port == service.listen_port)
        {
            return Err(port_used(service.listen_port));
        }
        services.push(service);
    }
    if services.len() > limit {
        return Err(too_many("services", limit));
    }
    Ok(services)
}

fn limits(lb: &LoadBalancer) -> (usize, usize) {
    load_balancer_type(&lb.load_balancer_type).map_or((0, 0), |t| (t.max_services, t.max_targets))
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
            return Err(too_many("targets", limit));
        }
        Ok(Target {
            kind,
            use_private_ip: spec.use_private_ip,
        })
    }

    fn load_balancer_action(&mut self, id: Id, command: &'static str, now: Timestamp) -> Id {
        self.start_action(
            NewAction::on(command, ResourceRef::load_balancer(id), Completion::Nothing),
            now,
        )
    }

    pub fn add_load_balancer_target(
        &mut self,
        id: Id,
        spec: &TargetSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        let target = self.checked_target(lb, spec, limits(lb).1)?;
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

    pub fn add_load_balancer_service(
        &mut self,
        id: Id,
        spec: &ServiceSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        let service = checked_service(spec)?;
        if lb.service(service.listen_port).is_some() {
            return Err(port_used(service.listen_port));
        }
        let limit = limits(lb).0;
        if lb.services.len() >= limit {
            return Err(too_many("services", limit));
        }
        self.load_balancer_mut(id)?.services.push(service);
        Ok(self.load_balancer_action(id, "add_service", now))
    }

    pub fn delete_load_balancer_service(
        &mut self,
        id: Id,
        listen_port: u16,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        self.actionable_load_balancer(id)?;
        let lb = self.load_balancer_mut(id)?;
        let before = lb.services.len();
        lb.services.retain(|s| s.listen_port != listen_port);
        if lb.services.len() == before {
            return Err(ApiError::operation(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no service listens on port {listen_port}"),
            ));
        }
        Ok(self.load_balancer_action(id, "delete_service", now))
    }
}
