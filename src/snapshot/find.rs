//! Finding snapshots: one with an image spec's labels to adopt instead of
//! building (waiting for one another build is still creating), one by its
//! ID, and what an existing snapshot says about itself when it is imported.

use std::time::Duration;

use tokio::time::Instant;
use tracing::info;

use super::error::SnapshotError;
use super::spec::{ImageSpec, user_labels};
use crate::hcloud::models::{Image, Labels};
use crate::hcloud::{Client, LabelSelector};
use crate::talos::image;
use crate::talos::release::TalosVersion;

/// The labels that identify a Talos snapshot of hct's.
pub fn selector(
    version: &TalosVersion,
    architecture: &str,
    schematic_id: Option<&str>,
) -> LabelSelector {
    let selector = LabelSelector::new()
        .eq("os", "talos")
        .eq("version", &version.to_string())
        .eq("arch", architecture);
    match schematic_id {
        Some(id) => selector.eq("schematic", image::schematic_label(id)),
        None => selector,
    }
}

/// An available snapshot with this spec's labels and schematic, waiting for
/// one that another build is still creating.
pub async fn existing(client: &Client, spec: &ImageSpec) -> Result<Option<Image>, SnapshotError> {
    let selector = selector(&spec.version, &spec.architecture, Some(&spec.schematic_id));
    let deadline = Instant::now() + spec.create_timeout;
    let mut pause = client.poll_interval();
    loop {
        let candidates: Vec<Image> = client
            .snapshots(&selector)
            .await
            .map_err(SnapshotError::hcloud("looking up existing Talos snapshots"))?
            .into_iter()
            .filter(|image| {
                image::schematic_in_description(&image.description)
                    .is_none_or(|id| id == spec.schematic_id)
            })
            .collect();
        if let Some(available) = candidates.iter().find(|i| i.status == "available") {
            return Ok(Some(available.clone()));
        }
        let Some(creating) = candidates.iter().find(|i| i.status == "creating") else {
            return Ok(None);
        };
        if Instant::now() >= deadline {
            return Err(SnapshotError::StillCreating { image: creating.id });
        }
        info!(
            image = creating.id,
            "talos image: waiting for a snapshot another build is creating"
        );
        client
            .sleep(pause, "waiting for a snapshot being created")
            .await
            .map_err(SnapshotError::hcloud("waiting for a Talos snapshot"))?;
        pause = client.pace().grow(pause, Duration::from_secs(10));
    }
}

/// The user's labels of snapshot `id` as they are now; None when the
/// snapshot is gone.
pub async fn current_labels(client: &Client, id: i64) -> Result<Option<Labels>, SnapshotError> {
    let image = client
        .image(id)
        .await
        .map_err(SnapshotError::hcloud("reading the Talos snapshot"))?;
    Ok(image.map(|image| user_labels(&image.labels)))
}

/// What a Talos snapshot of hct's is, read from its labels and description.
#[derive(Debug, Clone, PartialEq)]
pub struct Identified {
    pub id: i64,
    pub version: TalosVersion,
    pub architecture: String,
    pub schematic_id: String,
    /// The user's own labels (without the reserved ones).
    pub extra_labels: Labels,
}

/// Reads snapshot `id` to import it.
pub async fn import(client: &Client, id: i64) -> Result<Identified, SnapshotError> {
    let image = client
        .image(id)
        .await
        .map_err(SnapshotError::hcloud("reading the snapshot to import"))?
        .ok_or(SnapshotError::NotFound { image: id })?;
    identify(&image)
}

/// A snapshot's release, architecture and schematic, when it is a Talos
/// snapshot labelled the way hct labels them.
pub fn identify(image: &Image) -> Result<Identified, SnapshotError> {
    let not_ours = |why: &str| SnapshotError::NotOurs {
        image: image.id,
        why: why.to_string(),
    };
    if image.kind != "snapshot" {
        return Err(not_ours(&format!(
            "is a {} image, not a snapshot",
            image.kind
        )));
    }
    if image.labels.get("os").map(String::as_str) != Some("talos") {
        return Err(not_ours("is not labelled os=talos"));
    }
    let version = image
        .labels
        .get("version")
        .and_then(|v| TalosVersion::parse(v).ok())
        .ok_or_else(|| not_ours("has no valid version label"))?;
    let architecture = image
        .labels
        .get("arch")
        .filter(|a| image::hetzner_architecture(a).is_some())
        .ok_or_else(|| not_ours("has no arch label of amd64 or arm64"))?;
    let schematic_id = image::schematic_in_description(&image.description)
        .ok_or_else(|| not_ours("does not name its schematic ID in its description"))?;
    Ok(Identified {
        id: image.id,
        version,
        architecture: architecture.clone(),
        schematic_id: schematic_id.to_string(),
        extra_labels: user_labels(&image.labels),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_of_a_talos_snapshot() {
        let v = TalosVersion::new(1, 12, 6);
        let id = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";
        assert_eq!(
            selector(&v, "amd64", Some(id)).to_string(),
            "os=talos,version=v1.12.6,arch=amd64,schematic=376567988ad370138ad8b2698212367b"
        );
        assert_eq!(
            selector(&v, "arm64", None).to_string(),
            "os=talos,version=v1.12.6,arch=arm64"
        );
    }
}
