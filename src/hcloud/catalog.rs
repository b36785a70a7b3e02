//! What Hetzner offers: server types (with per-location availability and
//! deprecations) and locations.

use super::client::Client;
use super::error::HcloudError;
use super::models::{Location, ServerType};

impl Client {
    pub async fn server_types(&self) -> Result<Vec<ServerType>, HcloudError> {
        self.list("server_types", "server_types", &[]).await
    }

    pub async fn server_type(&self, name: &str) -> Result<Option<ServerType>, HcloudError> {
        let found: Vec<ServerType> = self
            .list(
                "server_types",
                "server_types",
                &[("name", name.to_string())],
            )
            .await?;
        Ok(found.into_iter().next())
    }

    pub async fn locations(&self) -> Result<Vec<Location>, HcloudError> {
        self.list("locations", "locations", &[]).await
    }
}
