//! Changing an image (its description, its labels, its type to
//! `snapshot`) and deleting it; system images allow neither.

use super::ImageType;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::labels::Labels;
use crate::resources::checked_labels;
use crate::state::World;

impl World {
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
