//! Creating a Primary IP (in a location, or for a powered-off server),
//! renaming or relabelling it, its delete protection, and deleting it.

use axum::http::StatusCode;

use super::{IpType, PrimaryIp, PrimaryIpSpec};
use crate::actions::{Completion, NewAction};
use crate::catalog;
use crate::clock::Timestamp;
use crate::errors::{ApiError, FieldErrors};
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::labels::Labels;
use crate::resources::{check_name, checked_labels};
use crate::state::World;

impl World {
    fn check_primary_ip_name(&self, name: &str, except: Option<Id>) -> Result<(), ApiError> {
        check_name(name)?;
        if self
            .primary_ips
            .values()
            .any(|p| Some(p.id) != except && p.name == name)
        {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        Ok(())
    }

    /// `POST /primary_ips`: the Primary IP, and the `assign_primary_ip`
    /// action when it is created for a server.
    pub fn create_primary_ip(
        &mut self,
        spec: PrimaryIpSpec,
        now: Timestamp,
    ) -> Result<(Id, Option<Id>), ApiError> {
        let mut errors = FieldErrors::default();
        let kind = IpType::parse(&spec.kind);
        if kind.is_none() {
            errors.push("type", "must be one of 'ipv4', 'ipv6'");
        }
        match (&spec.assignee_type, spec.assignee) {
            (Some(kind), _) if kind != "server" => {
                errors.push("assignee_type", "must be 'server'");
            }
            (None, Some(_)) => errors.push("assignee_type", "is required with assignee_id"),
            _ => {}
        }
        let placements = [
            spec.location.is_some(),
            spec.datacenter.is_some(),
            spec.assignee.is_some(),
        ];
        match placements.iter().filter(|given| **given).count() {
            0 => errors.push(
                "location",
                "one of location, datacenter or assignee_id is required",
            ),
            1 => {}
            _ => errors.push(
                "location",
                "location, datacenter and assignee_id are mutually exclusive",
            ),
        }
        // A data center is named after its location, e.g. fsn1-dc14.
        let named = spec.location.clone().or_else(|| {
            spec.datacenter
                .as_deref()
                .map(|dc| dc.split('-').next().unwrap_or_default().to_string())
        });
        if let Some(name) = &named
            && catalog::location(name).is_none()
        {
            let field = if spec.location.is_some() {
                "location"
            } else {
                "datacenter"
            };
            errors.push(field, format!("{field} '{name}' not found"));
        }
        errors.into_result()?;
        let Some(kind) = kind else {
            return Err(ApiError::Internal("validated type is missing".into()));
        };
        self.check_primary_ip_name(&spec.name, None)?;
        let labels = checked_labels(spec.labels)?;
        let location = match spec.assignee {
            Some(server) => {
                self.check_primary_ip_assignee(server, kind)?;
                self.server(server)?.location.clone()
            }
            None => named.unwrap_or_default(),
        };
        let ip = self.free_public_address(kind)?;
        let id = self.next_id(Some(ResourceKind::PrimaryIp));
        self.primary_ips.insert(
            id,
            PrimaryIp {
                id,
                name: spec.name,
                kind,
                ip,
                location,
                assignee: None,
                auto_delete: spec.auto_delete,
                labels,
                created: now,
                delete_protected: false,
            },
        );
        let action = spec
            .assignee
            .map(|server| self.start_assign_primary_ip(id, server, now));
        Ok((id, action))
    }

    pub fn update_primary_ip(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
        auto_delete: Option<bool>,
    ) -> Result<(), ApiError> {
        self.primary_ip(id)?;
        if let Some(name) = &name {
            self.check_primary_ip_name(name, Some(id))?;
        }
        let labels = labels.map(checked_labels).transpose()?;
        let ip = self.primary_ip_mut(id)?;
        if let Some(name) = name {
            ip.name = name;
        }
        if let Some(labels) = labels {
            ip.labels = labels;
        }
        if let Some(auto_delete) = auto_delete {
            ip.auto_delete = auto_delete;
        }
        Ok(())
    }

    /// `change_protection`: takes effect at once, with an action as on Hetzner.
    pub fn protect_primary_ip(
        &mut self,
        id: Id,
        delete: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        self.primary_ip_mut(id)?.delete_protected = delete;
        Ok(self.start_action(
            NewAction::on(
                "change_protection",
                ResourceRef::primary_ip(id),
                Completion::Nothing,
            ),
            now,
        ))
    }

    /// Only an unassigned, unprotected Primary IP can be deleted.
    pub fn delete_primary_ip(&mut self, id: Id) -> Result<(), ApiError> {
        let ip = self.primary_ip(id)?;
        if ip.delete_protected {
            return Err(ApiError::Protected { kind: "primary_ip" });
        }
        if let Some(server) = ip.assignee {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "must_be_unassigned",
                format!("primary IP {id} is still assigned to server {server}"),
            ));
        }
        self.primary_ips.remove(&id);
        Ok(())
    }
}
