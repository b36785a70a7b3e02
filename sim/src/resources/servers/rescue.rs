//! The rescue system from the API's side: enabling it for the next boot,
//! with the SSH keys it lets in, and disabling it. The boot into it is
//! `power`'s; the emulated rescue system itself is `crate::rescue`.

use super::random_password;
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::state::World;

impl World {
    /// Returns the action and the rescue system's root password.
    pub fn enable_rescue(
        &mut self,
        id: Id,
        kind: Option<&str>,
        ssh_keys: &[String],
        now: Timestamp,
    ) -> Result<(Id, String), ApiError> {
        self.actionable_server(id)?;
        if let Some(kind) = kind
            && kind != "linux64"
        {
            return Err(ApiError::field("type", "must be 'linux64'"));
        }
        let mut public_keys = Vec::new();
        for key in ssh_keys {
            match self.find_ssh_key(key) {
                Some(found) => public_keys.push(found.public_key.clone()),
                None => {
                    return Err(ApiError::field(
                        "ssh_keys",
                        format!("SSH key '{key}' not found"),
                    ));
                }
            }
        }
        let server = self.server_mut(id)?;
        server.rescue_enabled = true;
        server.rescue_keys = public_keys;
        let action = self.start_action(
            NewAction::on(
                "enable_rescue",
                ResourceRef::server(id),
                Completion::Nothing,
            ),
            now,
        );
        Ok((action, random_password()))
    }

    pub fn disable_rescue(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        self.actionable_server(id)?;
        let server = self.server_mut(id)?;
        server.rescue_enabled = false;
        server.rescue_keys.clear();
        Ok(self.start_action(
            NewAction::on(
                "disable_rescue",
                ResourceRef::server(id),
                Completion::Nothing,
            ),
            now,
        ))
    }
}
