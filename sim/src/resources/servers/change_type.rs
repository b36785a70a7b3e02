//! Moving a stopped server to another server type (`change_type`), and
//! what the action does when it finishes: the new type and disk, and a
//! boot.

use super::ServerStatus;
use crate::actions::{Completion, NewAction};
use crate::catalog;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::state::World;

impl World {
    /// Moves the server to another type; it must be off, and it boots again.
    pub fn change_type(
        &mut self,
        id: Id,
        server_type: &str,
        upgrade_disk: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        if server.status != ServerStatus::Off {
            return Err(ApiError::ServerNotStopped("type"));
        }
        let target = catalog::server_type(server_type).ok_or_else(|| {
            ApiError::field(
                "server_type",
                format!("server type '{server_type}' not found"),
            )
        })?;
        let current = server
            .server_type()
            .ok_or_else(|| ApiError::Internal(format!("server {id} has an unknown type")))?;
        if target.architecture != current.architecture {
            return Err(ApiError::InvalidServerType(format!(
                "cannot change from {} to {}: different architecture",
                current.name, target.name
            )));
        }
        if !target.orderable_in(&server.location) {
            return Err(ApiError::InvalidServerType(format!(
                "server type {} is not available in {}",
                target.name, server.location
            )));
        }
        if target.disk < server.primary_disk_size {
            return Err(ApiError::InvalidServerType(format!(
                "the disk of {} ({} GB) is smaller than the server's ({} GB)",
                target.name, target.disk, server.primary_disk_size
            )));
        }
        let disk = if upgrade_disk {
            target.disk
        } else {
            server.primary_disk_size
        };
        self.server_mut(id)?.status = ServerStatus::Migrating;
        let completion = Completion::ServerTypeChanged {
            server: id,
            server_type: target.name.to_string(),
            disk,
        };
        Ok(self.start_action(
            NewAction::on("change_server_type", ResourceRef::server(id), completion),
            now,
        ))
    }

    /// `change_server_type` finished.
    pub(crate) fn server_type_changed(
        &mut self,
        server: Id,
        server_type: String,
        disk: u32,
        at: Timestamp,
    ) {
        if let Some(s) = self.servers.get_mut(&server) {
            s.server_type = server_type;
            s.primary_disk_size = disk;
        }
        // The type change copies the disk and starts the server again.
        self.boot_server(server, at);
    }
}
