//! Spread placement groups: servers of one group run on different hosts.
//! Hetzner allows at most 10 servers in a spread group.

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;
use tracing::info;

use super::client::{Client, Retry};
use super::error::{HcloudError, Missing};
use super::labels::LabelSelector;
use super::models::{Labels, PlacementGroup};

#[derive(Deserialize)]
struct PlacementGroupEnvelope {
    placement_group: PlacementGroup,
}

impl Client {
    /// Creates a spread group. On `uniqueness_error`, the group of that name
    /// is adopted when it carries all of `labels`: ours, made by an earlier
    /// attempt whose answer was lost, or by an earlier run.
    pub async fn create_spread_group(
        &self,
        name: &str,
        labels: &Labels,
    ) -> Result<PlacementGroup, HcloudError> {
        let created = self
            .call::<PlacementGroupEnvelope>(
                Method::POST,
                "placement_groups",
                &[],
                Some(&json!({"name": name, "type": "spread", "labels": labels})),
                Retry::Transient,
            )
            .await;
        match created {
            Ok(envelope) => Ok(envelope.placement_group),
            Err(e) if e.code() == Some("uniqueness_error") => {
                let found: Vec<PlacementGroup> = self
                    .list(
                        "placement_groups",
                        "placement_groups",
                        &[("name", name.to_string())],
                    )
                    .await?;
                let ours = found.into_iter().find(|g| {
                    g.name == name && labels.iter().all(|(k, v)| g.labels.get(k) == Some(v))
                });
                match ours {
                    Some(group) => {
                        info!(placement_group = %name, id = group.id, "adopting existing placement group with our labels");
                        Ok(group)
                    }
                    None => Err(e),
                }
            }
            Err(e) => Err(e),
        }
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
