//! SSH keys: unique by name and by fingerprint.

use base64::Engine;
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind};
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};
use crate::resources::{check_name, checked_labels};
use crate::state::World;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SshKey {
    pub id: Id,
    pub name: String,
    pub fingerprint: String,
    pub public_key: String,
    pub labels: Labels,
    pub created: Timestamp,
}

impl SshKey {
    pub fn to_api(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "fingerprint": self.fingerprint,
            "public_key": self.public_key,
            "labels": self.labels,
            "created": self.created.rfc3339(),
        })
    }
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

/// The MD5 fingerprint of an OpenSSH public key, `aa:bb:…`, as Hetzner shows it.
pub fn fingerprint(public_key: &str) -> Result<String, String> {
    let mut parts = public_key.split_whitespace();
    let (Some(kind), Some(blob)) = (parts.next(), parts.next()) else {
        return Err("must be an OpenSSH public key: TYPE BASE64 [COMMENT]".into());
    };
    let blob = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|_| "key data is not valid base64".to_string())?;
    // The blob starts with its own type name as a length-prefixed string.
    let declared = blob
        .get(..4)
        .map(|n| u32::from_be_bytes([n[0], n[1], n[2], n[3]]) as usize)
        .and_then(|len| blob.get(4..4 + len));
    if declared != Some(kind.as_bytes()) {
        return Err(format!("key data does not hold a {kind} key"));
    }
    let digest = Md5::digest(&blob);
    Ok(digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":"))
}

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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A syntactically valid ed25519 public key whose key bytes are all `fill`.
    pub(crate) fn test_key(fill: u8) -> String {
        let mut blob = Vec::new();
        blob.extend_from_slice(&11u32.to_be_bytes());
        blob.extend_from_slice(b"ssh-ed25519");
        blob.extend_from_slice(&32u32.to_be_bytes());
        blob.extend_from_slice(&[fill; 32]);
        let data = base64::engine::general_purpose::STANDARD.encode(blob);
        format!("ssh-ed25519 {data} test@hct")
    }

    #[test]
    fn fingerprints_openssh_keys() {
        let fp = fingerprint(&test_key(7)).unwrap();
        assert_eq!(fp.len(), 47);
        assert_eq!(fp.matches(':').count(), 15);
        assert_ne!(fp, fingerprint(&test_key(8)).unwrap());
        assert!(fingerprint("ssh-ed25519").is_err());
        assert!(fingerprint("ssh-rsa !!!").is_err());
        let wrong_type = test_key(7).replacen("ssh-ed25519", "ssh-rsa", 1);
        assert!(fingerprint(&wrong_type).is_err());
    }

    #[test]
    fn names_and_fingerprints_are_unique() {
        let mut world = World::default();
        let now = Timestamp::now();
        world
            .create_ssh_key("a".into(), test_key(1), Labels::new(), now)
            .unwrap();
        let same_name = world
            .create_ssh_key("a".into(), test_key(2), Labels::new(), now)
            .unwrap_err();
        assert_eq!(same_name.code(), "uniqueness_error");
        let same_key = world
            .create_ssh_key("b".into(), test_key(1), Labels::new(), now)
            .unwrap_err();
        assert_eq!(same_key.code(), "uniqueness_error");
        let bad = world
            .create_ssh_key("c".into(), "nonsense".into(), Labels::new(), now)
            .unwrap_err();
        assert_eq!(bad.code(), "invalid_input");
    }
}
