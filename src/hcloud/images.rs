//! Images: the Talos snapshots hct builds and looks up by label.

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use super::client::{Client, Retry};
use super::error::{HcloudError, Missing};
use super::labels::LabelSelector;
use super::models::{Image, Labels};

#[derive(Deserialize)]
struct ImageEnvelope {
    image: Image,
}

impl Client {
    /// The image, or None when it does not exist.
    pub async fn image(&self, id: i64) -> Result<Option<Image>, HcloudError> {
        let found = self
            .call::<ImageEnvelope>(
                Method::GET,
                &format!("images/{id}"),
                &[],
                None,
                Retry::Transient,
            )
            .await
            .or_missing()?;
        Ok(found.map(|envelope| envelope.image))
    }

    /// Snapshots matching `selector`, newest first.
    pub async fn snapshots(&self, selector: &LabelSelector) -> Result<Vec<Image>, HcloudError> {
        self.list(
            "images",
            "images",
            &[
                ("type", "snapshot".to_string()),
                ("label_selector", selector.to_string()),
                ("sort", "created:desc".to_string()),
            ],
        )
        .await
    }

    pub async fn set_image_labels(&self, id: i64, labels: &Labels) -> Result<Image, HcloudError> {
        let envelope: ImageEnvelope = self
            .call(
                Method::PUT,
                &format!("images/{id}"),
                &[],
                Some(&json!({"labels": labels})),
                Retry::AlsoLocked,
            )
            .await?;
        Ok(envelope.image)
    }

    /// Deletes the image; Ok when it was already gone.
    pub async fn delete_image(&self, id: i64) -> Result<(), HcloudError> {
        self.call_json(
            Method::DELETE,
            &format!("images/{id}"),
            &[],
            None,
            Retry::AlsoLocked,
        )
        .await
        .or_missing()?;
        Ok(())
    }
}
