//! What the API shows of an image: its JSON, sizes written as the API
//! writes them.

use serde_json::{Value, json};

use super::{Image, ImageType};
use crate::state::World;

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
