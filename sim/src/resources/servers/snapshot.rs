//! Snapshots of a server's disk (`create_image`): the image is `creating`
//! and locked while the action runs, available when it finishes, and gone
//! if it fails.

use crate::actions::{Completion, NewAction};
use crate::catalog;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::labels::Labels;
use crate::rescue::DiskImage;
use crate::resources::checked_labels;
use crate::resources::images::{CreatedFrom, Image, ImageStatus, ImageType};
use crate::resources::servers::Server;
use crate::state::World;

/// What a snapshot of `server` holds: the Talos image on its disk, at the
/// release Talos installed last (an upgrade rewrites the disk).
fn disk_content(server: &Server) -> Option<DiskImage> {
    let mut disk = server.disk.clone()?;
    if let Some(talos) = &server.talos
        && !talos.version.is_empty()
    {
        disk.version.clone_from(&talos.version);
    }
    Some(disk)
}

impl World {
    /// Snapshots the server's disk; Hetzner allows this while it runs.
    pub fn create_image(
        &mut self,
        id: Id,
        kind: Option<&str>,
        description: Option<String>,
        labels: Labels,
        now: Timestamp,
    ) -> Result<(Id, Id), ApiError> {
        let server = self.actionable_server(id)?;
        match kind {
            None | Some("snapshot") => {}
            Some("backup") => {
                return Err(ApiError::field(
                    "type",
                    "backups are not enabled for this server",
                ));
            }
            Some(_) => return Err(ApiError::field("type", "must be 'snapshot' or 'backup'")),
        }
        let labels = checked_labels(labels)?;
        let source = server.image.and_then(|i| self.images.get(&i));
        let architecture = server
            .server_type()
            .map_or(catalog::Architecture::X86, |t| t.architecture);
        let image = Image {
            id: 0,
            kind: ImageType::Snapshot,
            status: ImageStatus::Creating,
            name: None,
            description: description
                .unwrap_or_else(|| format!("{}-{}", server.name, now.rfc3339())),
            image_size: None,
            disk_size: f64::from(server.primary_disk_size),
            created: now,
            created_from: Some(CreatedFrom {
                id,
                name: server.name.clone(),
            }),
            os_flavor: source.map_or_else(|| "unknown".into(), |i| i.os_flavor.clone()),
            os_version: None,
            architecture,
            labels,
            delete_protected: false,
            content: disk_content(server),
        };
        let image_id = self.next_id(Some(ResourceKind::Image));
        self.images.insert(
            image_id,
            Image {
                id: image_id,
                ..image
            },
        );
        let mut action = NewAction::on(
            "create_image",
            ResourceRef::server(id),
            Completion::ImageCreated { image: image_id },
        )
        .also(ResourceRef::image(image_id));
        action.locks.push(ResourceRef::image(image_id));
        Ok((image_id, self.start_action(action, now)))
    }

    /// `create_image` finished: the snapshot is available.
    pub(crate) fn snapshot_taken(&mut self, image: Id) {
        if let Some(i) = self.images.get_mut(&image) {
            i.status = ImageStatus::Available;
            // What a freshly installed root file system occupies, compressed.
            i.image_size = Some((i.disk_size * 0.011 * 100.0).round() / 100.0 + 0.3);
        }
    }

    /// A failed `create_image` leaves no image.
    pub(crate) fn discard_snapshot(&mut self, image: Id) {
        self.images.remove(&image);
    }
}
