//! Applying a firewall to servers and removing it from them, directly or
//! through label selectors. The change is made at once (the server's
//! `public_net.firewalls` shows it); a failed `apply_firewall` or
//! `remove_firewall` action takes it back. A label selector is kept as
//! given: the servers it stands for are those whose labels match it at the
//! time of asking, so a server created or relabelled later is covered too.

use axum::http::StatusCode;

use super::{Firewall, Target};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::labels::Selector;
use crate::state::World;

impl World {
    /// A server a firewall can be applied to: it exists and has a public
    /// interface (firewalls filter nothing else).
    pub(crate) fn check_firewall_target(
        &self,
        server: Id,
        missing: StatusCode,
    ) -> Result<(), ApiError> {
        let Some(found) = self.servers.get(&server) else {
            return Err(ApiError::operation(
                missing,
                "firewall_resource_not_found",
                format!("server with ID {server} not found"),
            ));
        };
        if found.public_ipv4.is_none() && found.public_ipv6.is_none() {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "private_net_only_server",
                format!("server {server} has no public interface"),
            ));
        }
        Ok(())
    }

    /// The servers `selector` stands for now: those with a public interface
    /// whose labels match, by ID.
    pub fn servers_selected(&self, selector: &str) -> Vec<Id> {
        let Ok(selector) = Selector::parse(selector) else {
            return Vec::new();
        };
        self.servers
            .values()
            .filter(|s| s.public_ipv4.is_some() || s.public_ipv6.is_some())
            .filter(|s| selector.matches(&s.labels))
            .map(|s| s.id)
            .collect()
    }

    /// Every server `firewall` applies to, directly or through a selector.
    pub fn firewall_servers(&self, firewall: &Firewall) -> Vec<Id> {
        let mut servers = firewall.servers.clone();
        for selector in &firewall.label_selectors {
            for server in self.servers_selected(selector) {
                if !servers.contains(&server) {
                    servers.push(server);
                }
            }
        }
        servers
    }

    /// Records `server` as a member and starts its `apply_firewall`.
    pub(crate) fn start_apply_firewall(&mut self, firewall: Id, server: Id, now: Timestamp) -> Id {
        if let Some(f) = self.firewalls.get_mut(&firewall) {
            f.servers.push(server);
        }
        self.start_firewall_action(
            "apply_firewall",
            firewall,
            &[server],
            Completion::FirewallApplied { firewall, server },
            now,
        )
    }

    /// Records `selector` and starts its `apply_firewall`, on the firewall
    /// and the servers it selects now.
    fn start_apply_selector(&mut self, firewall: Id, selector: &str, now: Timestamp) -> Id {
        if let Some(f) = self.firewalls.get_mut(&firewall) {
            f.label_selectors.push(selector.to_string());
        }
        let servers = self.servers_selected(selector);
        self.start_firewall_action(
            "apply_firewall",
            firewall,
            &servers,
            Completion::FirewallSelectorApplied {
                firewall,
                selector: selector.to_string(),
            },
            now,
        )
    }

    /// An action on the firewall and `servers` that locks neither.
    pub(super) fn start_firewall_action(
        &mut self,
        command: &'static str,
        firewall: Id,
        servers: &[Id],
        completion: Completion,
        now: Timestamp,
    ) -> Id {
        let mut action = NewAction::on(command, ResourceRef::firewall(firewall), completion);
        for server in servers {
            action = action.also(ResourceRef::server(*server));
        }
        action.locks.clear();
        self.start_action(action, now)
    }

    /// Starts applying `targets` (already checked) in order.
    pub(super) fn start_apply_targets(
        &mut self,
        firewall: Id,
        targets: &[Target],
        now: Timestamp,
    ) -> Vec<Id> {
        targets
            .iter()
            .map(|target| match target {
                Target::Server(server) => self.start_apply_firewall(firewall, *server, now),
                Target::LabelSelector(selector) => {
                    self.start_apply_selector(firewall, selector, now)
                }
            })
            .collect()
    }

    /// Refuses a target given twice, a missing or private server (a missing
    /// one is `missing`), and a target the firewall already has.
    pub(super) fn check_new_targets(
        &self,
        firewall: &Firewall,
        targets: &[Target],
        missing: StatusCode,
    ) -> Result<(), ApiError> {
        for (i, target) in targets.iter().enumerate() {
            if targets[..i].contains(target) {
                return Err(ApiError::operation(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "server_already_added",
                    format!("{} is given more than once", describe(target)),
                ));
            }
            let applied = match target {
                Target::Server(server) => {
                    self.check_firewall_target(*server, missing)?;
                    firewall.servers.contains(server)
                }
                Target::LabelSelector(selector) => firewall.label_selectors.contains(selector),
            };
            if applied {
                return Err(ApiError::operation(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "firewall_already_applied",
                    format!(
                        "firewall {} is already applied to {}",
                        firewall.id,
                        describe(target)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `apply_to_resources`: one `apply_firewall` action per target.
    pub fn apply_firewall(
        &mut self,
        id: Id,
        targets: &[Target],
        now: Timestamp,
    ) -> Result<Vec<Id>, ApiError> {
        self.check_new_targets(self.firewall(id)?, targets, StatusCode::NOT_FOUND)?;
        Ok(self.start_apply_targets(id, targets, now))
    }

    /// `remove_from_resources`: one `remove_firewall` action per target. A
    /// server the firewall covers only through a label selector stays.
    pub fn remove_firewall(
        &mut self,
        id: Id,
        targets: &[Target],
        now: Timestamp,
    ) -> Result<Vec<Id>, ApiError> {
        let firewall = self.firewall(id)?;
        for target in targets {
            let applied = match target {
                Target::Server(server) => firewall.servers.contains(server),
                Target::LabelSelector(selector) => firewall.label_selectors.contains(selector),
            };
            if let Target::Server(server) = target
                && !applied
                && self.firewall_servers(firewall).contains(server)
            {
                return Err(ApiError::operation(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "firewall_managed_by_label_selector",
                    format!(
                        "firewall {id} is applied to server {server} through a label selector \
                         and cannot be removed from it"
                    ),
                ));
            }
            if !applied {
                return Err(ApiError::operation(
                    StatusCode::NOT_FOUND,
                    "firewall_resource_not_found",
                    format!("firewall {id} is not applied to {}", describe(target)),
                ));
            }
        }
        let mut actions = Vec::new();
        for target in targets {
            let (servers, completion) = match target {
                Target::Server(server) => {
                    self.firewall_mut(id)?.servers.retain(|s| s != server);
                    let completion = Completion::FirewallRemoved {
                        firewall: id,
                        server: *server,
                    };
                    (vec![*server], completion)
                }
                Target::LabelSelector(selector) => {
                    let servers = self.servers_selected(selector);
                    self.firewall_mut(id)?
                        .label_selectors
                        .retain(|s| s != selector);
                    let completion = Completion::FirewallSelectorRemoved {
                        firewall: id,
                        selector: selector.clone(),
                    };
                    (servers, completion)
                }
            };
            actions.push(self.start_firewall_action(
                "remove_firewall",
                id,
                &servers,
                completion,
                now,
            ));
        }
        Ok(actions)
    }

    /// The firewalls applied to `server`, directly or through a selector,
    /// by ID.
    pub fn firewalls_of(&self, server: Id) -> Vec<Id> {
        self.firewalls
            .values()
            .filter(|f| self.firewall_servers(f).contains(&server))
            .map(|f| f.id)
            .collect()
    }

    /// A deleted server leaves every firewall.
    pub(crate) fn leave_firewalls(&mut self, server: Id) {
        for firewall in self.firewalls.values_mut() {
            firewall.servers.retain(|s| *s != server);
        }
    }

    /// A failed `apply_firewall`: the target is not applied after all.
    pub(crate) fn discard_firewall_target(&mut self, firewall: Id, target: &Target) {
        if let Some(f) = self.firewalls.get_mut(&firewall) {
            match target {
                Target::Server(server) => f.servers.retain(|s| s != server),
                Target::LabelSelector(selector) => f.label_selectors.retain(|s| s != selector),
            }
        }
    }

    /// A failed `remove_firewall`: the target is applied again.
    pub(crate) fn restore_firewall_target(&mut self, firewall: Id, target: Target) {
        if let Target::Server(server) = target
            && !self.servers.contains_key(&server)
        {
            return;
        }
        let Some(f) = self.firewalls.get_mut(&firewall) else {
            return;
        };
        match target {
            Target::Server(server) if !f.servers.contains(&server) => f.servers.push(server),
            Target::LabelSelector(selector) if !f.label_selectors.contains(&selector) => {
                f.label_selectors.push(selector)
            }
            _ => {}
        }
    }
}

fn describe(target: &Target) -> String {
    match target {
        Target::Server(server) => format!("server {server}"),
        Target::LabelSelector(selector) => format!("label selector '{selector}'"),
    }
}
