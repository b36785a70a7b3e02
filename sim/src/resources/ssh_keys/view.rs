//! What the API shows of an SSH key: its JSON.

use serde_json::{Value, json};

use super::SshKey;

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
