//! Images: Hetzner's system images and the snapshots made from servers.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::Architecture;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};
use crate::resources::checked_labels;
use crate::state::World;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageType {
    System,
    Snapshot,
    Backup,
    App,
}

impl ImageType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Snapshot => "snapshot",
            Self::Backup => "backup",
            Self::App => "app",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageStatus {
    Available,
    Creating,
    Unavailable,
}

impl ImageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Available => "available",
            Self::Creating => "creating",
            Self::Unavailable => "unavailable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedFrom {
    pub id: Id,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Image {
    pub id: Id,
    pub kind: ImageType,
    pub status: ImageStatus,
    /// Only system images have names.
    pub name: Option<String>,
    pub description: String,
    /// Compressed size in GB; known once a snapshot is done.
    pub image_size: Option<f64>,
    /// Size of the disk the image was taken from, in GB.
    pub disk_size: f64,
    pub created: Timestamp,
    pub created_from: Option<CreatedFrom>,
    pub os_flavor: String,
    pub os_version: Option<String>,
    pub architecture: Architecture,
    pub labels: Labels,
    pub delete_protected: bool,
    /// For snapshots: the Talos image the server's disk held, if a rescue
    /// system wrote one (hidden from the API; shown by `/_sim/state`).
    #[serde(default)]
    pub content: Option<crate::rescue::DiskImage>,
}

impl Image {
    pub fn to_api(&self, _world: &World) -> Value {
        json!({
            "id": self.id,
            "type": self.kind.as_str(),
            "status": self.status.as_str(),
            "name": self.name,
            "description": self.description,
            "image_size": self.image_size.map(gigabytes),
            "disk_size": gigabytes(self.disk_size),
            "created": self.created.rfc3339(),
            "created_from": self.created_from,
            "bound_to": null,
            "os_flavor": self.os_flavor,
            "os_version": self.os_version,
            "rapid_deploy": self.kind == ImageType::System,
            "protection": {"delete": self.delete_protected},
            "deprecated": null,
            "deprecation": null,
            "deleted": null,
            "labels": self.labels,
            "architecture": self.architecture.as_str(),
        })
    }
}

/// Sizes in GB as the API writes them: whole numbers without a fraction.
fn gigabytes(size: f64) -> Value {
    if size.fract() == 0.0 && size.abs() < 1e15 {
        json!(size as i64)
    } else {
        json!(size)
    }
}

impl Sortable for Image {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "name" => self.name.clone().map_or(SortKey::Missing, SortKey::Text),
            "created" => SortKey::Int(self.created.millis() as i64),
            _ => SortKey::Int(self.id),
        }
    }
}

impl World {
    /// The image a server of `architecture` boots from: by ID, or by the
    /// name of a system image (names are shared between architectures).
    pub fn image_for_server(
        &self,
        id_or_name: &str,
        architecture: Architecture,
    ) -> Result<&Image, ApiError> {
        let by_id = id_or_name
            .parse::<Id>()
            .ok()
            .and_then(|id| self.images.get(&id));
        let image = match by_id {
            Some(image) => image,
            None => self
                .images
                .values()
                .filter(|i| i.name.as_deref() == Some(id_or_name))
                .find(|i| i.architecture == architecture)
                .ok_or_else(|| {
                    ApiError::field("image", format!("image '{id_or_name}' not found"))
                })?,
        };
        if image.architecture != architecture {
            return Err(ApiError::field(
                "image",
                format!(
                    "image {} is for {} but the server type is {}",
                    image.id,
                    image.architecture.as_str(),
                    architecture.as_str()
                ),
            ));
        }
        if image.status != ImageStatus::Available {
            return Err(ApiError::field(
                "image",
                format!("image {} is not available yet", image.id),
            ));
        }
        Ok(image)
    }

    pub fn update_image(
        &mut self,
        id: Id,
        description: Option<String>,
        labels: Option<Labels>,
        kind: Option<&str>,
    ) -> Result<(), ApiError> {
        let image = self.image(id)?;
        if image.kind == ImageType::System {
            return Err(ApiError::Forbidden(
                "system images cannot be changed".into(),
            ));
        }
        if let Some(kind) = kind
            && kind != "snapshot"
        {
            return Err(ApiError::field("type", "can only be changed to 'snapshot'"));
        }
        let labels = labels.map(checked_labels).transpose()?;
        let image = self.image_mut(id)?;
        if let Some(description) = description {
            image.description = description;
        }
        if let Some(labels) = labels {
            image.labels = labels;
        }
        if kind.is_some() {
            image.kind = ImageType::Snapshot;
        }
        Ok(())
    }

    pub fn delete_image(&mut self, id: Id) -> Result<(), ApiError> {
        let image = self.image(id)?;
        if image.kind == ImageType::System {
            return Err(ApiError::Forbidden(
                "only snapshot and backup images can be deleted".into(),
            ));
        }
        if image.delete_protected {
            return Err(ApiError::Protected { kind: "image" });
        }
        self.ensure_unlocked(ResourceRef::image(id))?;
        self.images.remove(&id);
        Ok(())
    }
}
