//! Images: the Talos snapshots hct builds and looks up by label.

use std::time::Duration;

use reqwest::Method;
use tokio::time::Instant;
use tracing::info;

use serde::Deserialize;
use serde_json::json;

use super::actions::PROGRESS_LOG_EVERY;
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

    /// Waits until the image is `available` (a snapshot whose action is not
    /// known, see `create_snapshot`); an error when it goes away or fails.
    pub async fn wait_for_image(
        &self,
        id: i64,
        what: &str,
        timeout: Duration,
    ) -> Result<Image, HcloudError> {
        let started = Instant::now();
        let mut logged = started;
        loop {
            let image = self
                .image(id)
                .await?
                .ok_or_else(|| HcloudError::ImageFailed {
                    id,
                    status: "gone".into(),
                })?;
            match image.status.as_str() {
                "available" => return Ok(image),
                "creating" => {}
                other => {
                    return Err(HcloudError::ImageFailed {
                        id,
                        status: other.to_string(),
                    });
                }
            }
            if started.elapsed() >= timeout {
                return Err(HcloudError::Timeout {
                    what: format!("{what} (image {id} still {})", image.status),
                    waited: started.elapsed(),
                });
            }
            if logged.elapsed() >= PROGRESS_LOG_EVERY {
                logged = Instant::now();
                info!(
                    "{what}: still waiting for image {id} ({} elapsed)",
                    crate::duration::format(started.elapsed())
                );
            }
            self.sleep(self.poll_interval(), what).await?;
        }
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
