//! Applying a firewall to servers and removing it from them. The change is
//! made at once (the server's `public_net.firewalls` shows it); a failed
//! `apply_firewall` or `remove_firewall` action takes it back.

use axum::http::StatusCode;

use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
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

    /// Records `server` as a member and starts its `apply_firewall`.
    pub(crate) fn start_apply_firewall(&mut self, firewall: Id, server: Id, now: Timestamp) -> Id {
        if let Some(f) = self.firewalls.get_mut(&firewall) {
            f.servers.push(server);
        }
        let mut action = NewAction::on(
            "apply_firewall",
            ResourceRef::firewall(firewall),
            Completion::FirewallApplied { firewall, server },
        )
        .also(ResourceRef::server(server));
        action.locks.clear();
        self.start_action(action, now)
    }

    /// `apply_to_resources`: one `apply_firewall` action per server.
    pub fn apply_firewall(
        &mut self,
        id: Id,
        servers: &[Id],
        now: Timestamp,
    ) -> Result<Vec<Id>, ApiError> {
        let firewall = self.firewall(id)?;
        for server in servers {
            self.check_firewall_target(*server, StatusCode::NOT_FOUND)?;
            if firewall.servers.contains(server) {
                return Err(ApiError::operation(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "firewall_already_applied",
                    format!("firewall {id} is already applied to server {server}"),
                ));
            }
        }
        Ok(servers
            .iter()
            .map(|server| self.start_apply_firewall(id, *server, now))
            .collect())
    }

    /// `remove_from_resources`: one `remove_firewall` action per server.
    pub fn remove_firewall(
        &mut self,
        id: Id,
        servers: &[Id],
        now: Timestamp,
    ) -> Result<Vec<Id>, ApiError> {
        let firewall = self.firewall(id)?;
        for server in servers {
            if !firewall.servers.contains(server) {
                return Err(ApiError::operation(
                    StatusCode::NOT_FOUND,
                    "firewall_resource_not_found",
                    format!("firewall {id} is not applied to server {server}"),
                ));
            }
        }
        let mut actions = Vec::new();
        for server in servers {
            self.firewall_mut(id)?.servers.retain(|s| s != server);
            let mut action = NewAction::on(
                "remove_firewall",
                ResourceRef::firewall(id),
                Completion::FirewallRemoved {
                    firewall: id,
                    server: *server,
                },
            )
            .also(ResourceRef::server(*server));
            action.locks.clear();
            actions.push(self.start_action(action, now));
        }
        Ok(actions)
    }

    /// The firewalls applied to `server`, by ID.
    pub fn firewalls_of(&self, server: Id) -> Vec<Id> {
        self.firewalls
            .values()
            .filter(|f| f.servers.contains(&server))
            .map(|f| f.id)
            .collect()
    }

    /// A deleted server leaves every firewall.
    pub(crate) fn leave_firewalls(&mut self, server: Id) {
        for firewall in self.firewalls.values_mut() {
            firewall.servers.retain(|s| *s != server);
        }
    }

    /// A failed `apply_firewall`: the server is not a member after all.
    pub(crate) fn discard_firewall_member(&mut self, firewall: Id, server: Id) {
        if let Some(f) = self.firewalls.get_mut(&firewall) {
            f.servers.retain(|s| *s != server);
        }
    }

    /// A failed `remove_firewall`: the server is a member again.
    pub(crate) fn restore_firewall_member(&mut self, firewall: Id, server: Id) {
        if self.servers.contains_key(&server)
            && let Some(f) = self.firewalls.get_mut(&firewall)
            && !f.servers.contains(&server)
        {
            f.servers.push(server);
        }
    }
}
