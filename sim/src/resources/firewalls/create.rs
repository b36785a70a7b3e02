//! Creating a firewall (with rules and servers to apply it to), renaming or
//! relabelling it, replacing its rules, and deleting it.

use axum::http::StatusCode;

use super::rules::checked_rules;
use super::{Firewall, RuleSpec};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::labels::Labels;
use crate::resources::{check_name, checked_labels};
use crate::state::World;

impl World {
    fn check_firewall_name(&self, name: &str, except: Option<Id>) -> Result<(), ApiError> {
        check_name(name)?;
        if self
            .firewalls
            .values()
            .any(|f| Some(f.id) != except && f.name == name)
        {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        Ok(())
    }

    /// `POST /firewalls`: the firewall and its actions (`set_firewall_rules`
    /// if it has rules, one `apply_firewall` per server).
    pub fn create_firewall(
        &mut self,
        name: String,
        labels: Labels,
        rules: &[RuleSpec],
        servers: &[Id],
        now: Timestamp,
    ) -> Result<(Id, Vec<Id>), ApiError> {
        self.check_firewall_name(&name, None)?;
        let labels = checked_labels(labels)?;
        let rules = checked_rules(rules)?;
        for (i, server) in servers.iter().enumerate() {
            if servers[..i].contains(server) {
                return Err(ApiError::operation(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "server_already_added",
                    format!("server {server} is given more than once"),
                ));
            }
            // On create, a missing server is a 422 (apply answers 404).
            self.check_firewall_target(*server, StatusCode::UNPROCESSABLE_ENTITY)?;
        }
        let id = self.next_id(Some(ResourceKind::Firewall));
        let has_rules = !rules.is_empty();
        self.firewalls.insert(
            id,
            Firewall {
                id,
                name,
                labels,
                created: now,
                rules,
                servers: Vec::new(),
            },
        );
        let mut actions = Vec::new();
        if has_rules {
            actions.push(self.start_action(
                NewAction::on(
                    "set_firewall_rules",
                    ResourceRef::firewall(id),
                    Completion::Nothing,
                ),
                now,
            ));
        }
        for server in servers {
            actions.push(self.start_apply_firewall(id, *server, now));
        }
        Ok((id, actions))
    }

    pub fn update_firewall(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
    ) -> Result<(), ApiError> {
        self.firewall(id)?;
        if let Some(name) = &name {
            self.check_firewall_name(name, Some(id))?;
        }
        let labels = labels.map(checked_labels).transpose()?;
        let firewall = self.firewall_mut(id)?;
        if let Some(name) = name {
            firewall.name = name;
        }
        if let Some(labels) = labels {
            firewall.labels = labels;
        }
        Ok(())
    }

    /// `set_rules`: the new rules replace the old ones; a
    /// `set_firewall_rules` action, and an `apply_firewall` per server it is
    /// applied to (they get the new rules).
    pub fn set_firewall_rules(
        &mut self,
        id: Id,
        rules: &[RuleSpec],
        now: Timestamp,
    ) -> Result<Vec<Id>, ApiError> {
        self.firewall(id)?;
        let rules = checked_rules(rules)?;
        self.ensure_unlocked(ResourceRef::firewall(id))?;
        let firewall = self.firewall_mut(id)?;
        firewall.rules = rules;
        let servers = firewall.servers.clone();
        let mut actions = vec![self.start_action(
            NewAction::on(
                "set_firewall_rules",
                ResourceRef::firewall(id),
                Completion::Nothing,
            ),
            now,
        )];
        for server in servers {
            let mut apply = NewAction::on(
                "apply_firewall",
                ResourceRef::firewall(id),
                Completion::Nothing,
            )
            .also(ResourceRef::server(server));
            apply.locks.clear();
            actions.push(self.start_action(apply, now));
        }
        Ok(actions)
    }

    /// A firewall applied to servers is in use and stays.
    pub fn delete_firewall(&mut self, id: Id) -> Result<(), ApiError> {
        let firewall = self.firewall(id)?;
        if !firewall.servers.is_empty() {
            return Err(ApiError::ResourceInUse(format!(
                "firewall with ID {id} is still applied to {} resource(s)",
                firewall.servers.len()
            )));
        }
        self.ensure_unlocked(ResourceRef::firewall(id))?;
        self.firewalls.remove(&id);
        Ok(())
    }
}
