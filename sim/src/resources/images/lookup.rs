//! The image a new server boots from: by ID or by a system image's name,
//! for the server type's architecture, and only once it is available.

use super::{Image, ImageStatus};
use crate::catalog::Architecture;
use crate::errors::ApiError;
use crate::ids::Id;
use crate::state::World;

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
}
