//! What a server carries besides its disk: an ISO in its virtual drive
//! (`attach_iso`, `detach_iso`) and the backup option (`enable_backup`,
//! `disable_backup`). Each takes effect at once, under an action that holds
//! the server's lock while it runs.

use crate::actions::{Completion, NewAction};
use crate::catalog;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::state::World;

/// The window Hetzner picks for a server's daily backup (UTC hours).
const BACKUP_WINDOW: &str = "22-02";

impl World {
    pub fn attach_iso(&mut self, id: Id, iso: &str, now: Timestamp) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        let found = catalog::iso(iso)
            .ok_or_else(|| ApiError::field("iso", format!("ISO '{iso}' not found")))?;
        let architecture = server.server_type().map(|t| t.architecture);
        if found.architecture.is_some() && found.architecture != architecture {
            return Err(ApiError::field(
                "iso",
                format!(
                    "ISO {} is for another architecture than the server",
                    found.name
                ),
            ));
        }
        self.server_mut(id)?.iso = Some(found.id);
        Ok(self.server_action("attach_iso", id, now))
    }

    pub fn detach_iso(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        self.actionable_server(id)?;
        self.server_mut(id)?.iso = None;
        Ok(self.server_action("detach_iso", id, now))
    }

    pub fn enable_backup(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        self.actionable_server(id)?;
        self.server_mut(id)?.backup_window = Some(BACKUP_WINDOW.into());
        Ok(self.server_action("enable_backup", id, now))
    }

    pub fn disable_backup(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        self.actionable_server(id)?;
        self.server_mut(id)?.backup_window = None;
        Ok(self.server_action("disable_backup", id, now))
    }

    fn server_action(&mut self, command: &'static str, id: Id, now: Timestamp) -> Id {
        let action = NewAction::on(command, ResourceRef::server(id), Completion::Nothing);
        self.start_action(action, now)
    }
}
