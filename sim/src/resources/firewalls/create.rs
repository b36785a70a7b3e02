//! Creating a firewall (with rules and servers to apply it to), renaming or
//! relabelling it, replacing its rules, and deleting it.

use axum::http::StatusCode;

use super::rules::checked_rules;
use super::{Firewall, RuleSpec, Target};
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
    /// if it has rules, one `apply_firewall` per target of `apply_to`).
    pub fn create_firewall(
        &mut self,
        name: String,
        labels: Labels,
        rules: &[RuleSpec],
        targets: &[Target],
        now: Timestamp,
    ) -> Result<(Id, Vec<Id>), ApiError> {
        self.check_firewall_name(&name, None)?;
        let labels = checked_labels(labels)?;
        let rules = checked_rules(rules)?;
        let id = self.next_id(Some(ResourceKind::Firewall));
        let firewall = Firewall {
            id,
            name,
            labels,
            created: now,
            rules,
            servers: Vec::new(),
            label_selectors: Vec::new(),
        };
        // On create, a missing server is a 422 (apply answers 404).
        self.check_new_targets(&firewall, targets, StatusCode::UNPROCESSABLE_ENTITY)?;
        let has_rules = !firewall.rules.is_empty();
        self.firewalls.insert(id, firewall);
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
        actions.extend(self.start_apply_targets(id, targets, now));
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
        let servers = self.firewall_servers(self.firewall(id)?);
        let mut actions = vec![self.start_action(
            NewAction::on(
                "set_firewall_rules",
                ResourceRef::firewall(id),
                Completion::Nothing,
            ),
            now,
        )];
        for server in servers {
            actions.push(self.start_firewall_action(
                "apply_firewall",
                id,
                &[server],
                Completion::Nothing,
                now,
            ));
        }
        Ok(actions)
    }

    /// A firewall applied to servers or label selectors is in use and stays.
    pub fn delete_firewall(&mut self, id: Id) -> Result<(), ApiError> {
        let firewall = self.firewall(id)?;
        let applied = firewall.servers.len() + firewall.label_selectors.len();
        if applied > 0 {
            return Err(ApiError::ResourceInUse(format!(
                "firewall with ID {id} is still applied to {applied} resource(s)"
            )));
        }
        self.ensure_unlocked(ResourceRef::firewall(id))?;
        self.firewalls.remove(&id);
        Ok(())
    }
}
