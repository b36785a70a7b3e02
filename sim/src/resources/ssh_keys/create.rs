//! Creating an SSH key (its name and fingerprint unique), finding one by ID
//! or name, renaming or relabelling it, and deleting it.

use super::{SshKey, fingerprint};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind};
use crate::labels::Labels;
use crate::resources::{check_name, checked_labels};
use crate::state::World;

impl World {
    /// A key by ID or name, as `ssh_keys` in requests may give either.
    pub fn find_ssh_key(&self, id_or_name: &str) -> Option<&SshKey> {
        self.ssh_keys
            .values()
            .find(|k| k.name == id_or_name || k.id.to_string() == id_or_name)
    }

    pub fn create_ssh_key(
        &mut self,
        name: String,
        public_key: String,
        labels: Labels,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        check_name(&name)?;
        let labels = checked_labels(labels)?;
        let fingerprint =
            fingerprint(&public_key).map_err(|message| ApiError::field("public_key", message))?;
        if self.ssh_keys.values().any(|k| k.name == name) {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        if self.ssh_keys.values().any(|k| k.fingerprint == fingerprint) {
            return Err(ApiError::Uniqueness {
                field: "public_key",
            });
        }
        let id = self.next_id(Some(ResourceKind::SshKey));
        self.ssh_keys.insert(
            id,
            SshKey {
                id,
                name,
                fingerprint,
                public_key: public_key.trim().to_string(),
                labels,
                created: now,
            },
        );
        Ok(id)
    }

    pub fn update_ssh_key(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
    ) -> Result<(), ApiError> {
        self.ssh_key(id)?;
        if let Some(name) = &name {
            check_name(name)?;
            if self
                .ssh_keys
                .values()
                .any(|k| k.id != id && &k.name == name)
            {
                return Err(ApiError::Uniqueness { field: "name" });
            }
        }
        let labels = labels.map(checked_labels).transpose()?;
        let key = self
            .ssh_keys
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found("ssh_key", id))?;
        if let Some(name) = name {
            key.name = name;
        }
        if let Some(labels) = labels {
            key.labels = labels;
        }
        Ok(())
    }

    pub fn delete_ssh_key(&mut self, id: Id) -> Result<(), ApiError> {
        self.ssh_keys
            .remove(&id)
            .map(|_| ())
            .ok_or_else(|| ApiError::not_found("ssh_key", id))
    }
}
