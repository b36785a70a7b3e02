//! SSH keys (the temporary key of an image build).

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use super::client::{Client, Retry};
use super::error::{HcloudError, Missing};
use super::labels::LabelSelector;
use super::models::{Labels, SshKey};

#[derive(Deserialize)]
struct SshKeyEnvelope {
    ssh_key: SshKey,
}

impl Client {
    pub async fn create_ssh_key(
        &self,
        name: &str,
        public_key: &str,
        labels: &Labels,
    ) -> Result<SshKey, HcloudError> {
        let envelope: SshKeyEnvelope = self
            .call(
                Method::POST,
                "ssh_keys",
                &[],
                Some(&json!({"name": name, "public_key": public_key, "labels": labels})),
                Retry::Transient,
            )
            .await?;
        Ok(envelope.ssh_key)
    }

    pub async fn ssh_keys(&self, selector: &LabelSelector) -> Result<Vec<SshKey>, HcloudError> {
        self.list(
            "ssh_keys",
            "ssh_keys",
            &[("label_selector", selector.to_string())],
        )
        .await
    }

    /// Deletes the key; Ok when it was already gone.
    pub async fn delete_ssh_key(&self, id: i64) -> Result<(), HcloudError> {
        self.call_json(
            Method::DELETE,
            &format!("ssh_keys/{id}"),
            &[],
            None,
            Retry::Transient,
        )
        .await
        .or_missing()?;
        Ok(())
    }
}
