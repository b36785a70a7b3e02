//! SSH keys: unique by name and by fingerprint. This file holds the record
//! only; the rest is in the file named after it:
//!
//! - `create`: creating, finding, renaming or relabelling and deleting keys;
//! - `openssh`: the fingerprint of an OpenSSH public key;
//! - `view`: the key as the API shows it.

mod create;
mod openssh;
#[cfg(test)]
pub(crate) mod tests;
mod view;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};

pub use self::openssh::fingerprint;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SshKey {
    pub id: Id,
    pub name: String,
    pub fingerprint: String,
    pub public_key: String,
    pub labels: Labels,
    pub created: Timestamp,
}

impl Sortable for SshKey {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "name" => SortKey::Text(self.name.clone()),
            _ => SortKey::Int(self.id),
        }
    }
}
