//! Networks: hct only reads them (the user's Terraform owns the network).

use reqwest::Method;
use serde::Deserialize;

use super::client::{Client, Retry};
use super::error::{HcloudError, Missing};
use super::models::Network;

#[derive(Deserialize)]
struct NetworkEnvelope {
    network: Network,
}

impl Client {
    /// The network, or None when it does not exist.
    pub async fn network(&self, id: i64) -> Result<Option<Network>, HcloudError> {
        let found = self
            .call::<NetworkEnvelope>(
                Method::GET,
                &format!("networks/{id}"),
                &[],
                None,
                Retry::Transient,
            )
            .await
            .or_missing()?;
        Ok(found.map(|envelope| envelope.network))
    }
}
