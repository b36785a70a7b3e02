//! Networks: hct only reads them (the user's Terraform owns the network).

use reqwest::Method;
use serde::Deserialize;

use super::client::{Client, Retry};
use super::error::HcloudError;
use super::models::Network;

#[derive(Deserialize)]
struct NetworkEnvelope {
    network: Network,
}

impl Client {
    /// The network, or None when it does not exist.
    pub async fn network(&self, id: i64) -> Result<Option<Network>, HcloudError> {
        match self
            .call::<NetworkEnvelope>(
                Method::GET,
                &format!("networks/{id}"),
                &[],
                None,
                Retry::Transient,
            )
            .await
        {
            Ok(envelope) => Ok(Some(envelope.network)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }
}
