//! Spread placement groups: servers of one group run on different hosts.
//! Hetzner allows at most 10 servers in a spread group.

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use super::client::{Client, Retry};
use super::error::{HcloudError, Missing};
use super::labels::LabelSelector;
use super::models::{Labels, PlacementGroup};

#[derive(Deserialize)]
struct PlacementGroupEnvelope {
    placement_group: PlacementGroup,
}

impl Client {
    pub async fn create_spread_group(
        &self,
        name: &str,
        labels: &Labels,
    ) -> Result<PlacementGroup, HcloudError> {
        let envelope: PlacementGroupEnvelope = self
            .call(
                Method::POST,
                "placement_groups",
                &[],
                Some(&json!({"name": name, "type": "spread", "labels": labels})),
                Retry::Transient,
            )
            .await?;
        Ok(envelope.placement_group)
    }

    pub async fn placement_groups(
        &self,
        selector: &LabelSelector,
    ) -> Result<Vec<PlacementGroup>, HcloudError> {
        self.list(
            "placement_groups",
            "placement_groups",
            &[("label_selector", selector.to_string())],
        )
        .await
    }

    /// Deletes the group; Ok when it was already gone.
    pub async fn delete_placement_group(&self, id: i64) -> Result<(), HcloudError> {
        self.call_json(
            Method::DELETE,
            &format!("placement_groups/{id}"),
            &[],
            None,
            Retry::AlsoLocked,
        )
        .await
        .or_missing()?;
        Ok(())
    }
}
