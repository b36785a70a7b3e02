//! Images: Hetzner's system images and the snapshots made from servers.
//! This file holds the records only; the rest is in the file named after it:
//!
//! - `lookup`: the image a new server boots from;
//! - `update`: changing an image's description, labels or type, deleting it;
//! - `view`: the image as the API shows it.
//!
//! Snapshots are taken by a server's request, in `servers::snapshot`.
//! Keeping the operations (`impl World`) out of this file lets the world
//! hold images without depending on what is done with them.

mod lookup;
mod update;
mod view;

use serde::{Deserialize, Serialize};

use crate::catalog::Architecture;
use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};

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
