//! `--state FILE`: the world is loaded at start, saved shortly after it
//! changes and once more at shutdown; with it the Talos nodes' disks
//! (`talos_disks`, by server id), which the world's own serialization
//! (also behind `/_sim/state`) leaves out because they hold secrets. Writes go to a temporary file that
//! replaces the old one, so a crash never leaves half a state behind.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;
use tracing::warn;

use std::collections::BTreeMap;

use crate::Id;
use crate::app::AppState;
use crate::state::World;
use crate::talos::node::SavedDisk;

const SAVE_EVERY: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a saved hct-sim state: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// The saved world, or None when the file does not exist yet.
pub fn load(path: &Path) -> Result<Option<World>, PersistError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(PersistError::Read {
                path: path.display().to_string(),
                source,
            });
        }
    };
    let parse_error = |source| PersistError::Parse {
        path: path.display().to_string(),
        source,
    };
    let mut saved: serde_json::Value = serde_json::from_str(&text).map_err(parse_error)?;
    let disks = saved
        .as_object_mut()
        .and_then(|o| o.remove(TALOS_DISKS))
        .unwrap_or_default();
    let mut world: World = serde_json::from_value(saved).map_err(parse_error)?;
    let disks: BTreeMap<Id, SavedDisk> = serde_json::from_value(disks).unwrap_or_default();
    for (id, disk) in disks {
        if let Some(talos) = world.servers.get_mut(&id).and_then(|s| s.talos.as_mut()) {
            let running = crate::talos::lifecycle::running_version(talos);
            talos.node.disk = disk.restore(running.as_ref());
        }
    }
    Ok(Some(world))
}

const TALOS_DISKS: &str = "talos_disks";

pub fn save(sim: &AppState, path: &Path) -> Result<(), PersistError> {
    let text = {
        let world = sim.world();
        let mut saved = serde_json::to_value(&*world).unwrap_or_default();
        let disks: BTreeMap<Id, SavedDisk> = world
            .servers
            .iter()
            .filter_map(|(id, s)| Some((*id, SavedDisk::of(&s.talos.as_ref()?.node.disk))))
            .collect();
        saved[TALOS_DISKS] = serde_json::to_value(disks).unwrap_or_default();
        serde_json::to_string_pretty(&saved).unwrap_or_default()
    };
    let write = |source| PersistError::Write {
        path: path.display().to_string(),
        source,
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    // The state holds machine secrets and the cluster's Secrets: owner only.
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(write)?;
        file.write_all(text.as_bytes()).map_err(write)?;
    }
    std::fs::rename(&tmp, path).map_err(write)
}

/// Saves whenever the world changed, until told to stop (the final save
/// is the shutdown's).
pub async fn keep_saved(sim: AppState, path: std::path::PathBuf, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(SAVE_EVERY) => {}
            _ = stop.changed() => break,
        }
        // Looking at the world finishes due actions, which may change it.
        drop(sim.world());
        if sim.dirty.swap(false, Ordering::AcqRel)
            && let Err(e) = save(&sim, &path)
        {
            warn!("{e}");
        }
    }
}
