//! Changing a snapshot that exists: its labels, and deleting it.

use std::time::Duration;

use tracing::info;

use super::error::SnapshotError;
use super::spec::ImageSpec;
use crate::hcloud::Client;

/// Gives snapshot `id` the labels of `spec` (the user's and hct's).
pub async fn relabel(client: &Client, id: i64, spec: &ImageSpec) -> Result<(), SnapshotError> {
    client
        .set_image_labels(id, &spec.labels())
        .await
        .map(drop)
        .map_err(SnapshotError::hcloud(
            "updating the Talos snapshot's labels",
        ))
}

/// Deletes snapshot `id`, giving up after `timeout`.
pub async fn delete(client: &Client, id: i64, timeout: Duration) -> Result<(), SnapshotError> {
    match tokio::time::timeout(timeout, client.delete_image(id)).await {
        Ok(Ok(())) => {
            info!(image = id, "talos image: deleted the snapshot");
            Ok(())
        }
        Ok(Err(e)) => Err(SnapshotError::hcloud("deleting the Talos snapshot")(e)),
        Err(_) => Err(SnapshotError::DeleteTimedOut { image: id, timeout }),
    }
}
