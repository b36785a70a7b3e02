//! What hct knows of a snapshot, written beside it as `<snapshot>.json`
//! (in the clear: nothing secret): whose cluster it is (its name, and the
//! fingerprint of its secrets' OS CA, as hct's server labels carry it),
//! when and from which node it was taken, its size, and the releases the
//! cluster ran. A restore checks the fingerprint, so a snapshot of another
//! cluster is never restored into this one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::BackupError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFacts {
    pub cluster: String,
    /// The fingerprint of the cluster's secrets (`secrets_fingerprint`).
    pub secrets: String,
    /// RFC 3339, UTC.
    pub taken_at: String,
    pub node: String,
    /// etcd's bytes (database and hash), before encryption.
    pub bytes: u64,
    /// The Talos release the node it came from ran (before an upgrade,
    /// the old one).
    pub talos_version: String,
    /// The Kubernetes release the configuration named at the time (before
    /// a Kubernetes upgrade, already the new one: hct does not ask the API
    /// server).
    pub kubernetes_version: Option<String>,
}

/// Where the facts of the snapshot at `snapshot` are.
pub fn facts_path(snapshot: &Path) -> PathBuf {
    let mut name = snapshot.as_os_str().to_owned();
    name.push(".json");
    PathBuf::from(name)
}

impl SnapshotFacts {
    /// Writes them beside `snapshot` (owner-only, never over a file).
    pub fn write(&self, snapshot: &Path) -> Result<(), BackupError> {
        let path = facts_path(snapshot);
        let io = |source| BackupError::Io {
            path: path.clone(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path).map_err(io)?;
        std::io::Write::write_all(&mut file, &self.to_json()).map_err(io)
    }

    /// As written: pretty JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// The facts beside `snapshot`; None when there are none (a snapshot
    /// hct did not write).
    pub fn read(snapshot: &Path) -> Result<Option<Self>, BackupError> {
        let path = facts_path(snapshot);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(BackupError::Io { path, source }),
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|e| BackupError::Unreadable {
                path,
                reason: e.to_string(),
            })
    }

    /// Err (why) when the snapshot is not of the cluster whose secrets
    /// have `fingerprint`.
    pub fn check_cluster(&self, fingerprint: &str) -> Result<(), String> {
        if self.secrets == fingerprint {
            return Ok(());
        }
        Err(format!(
            "the snapshot is of cluster {} (secrets {}), not of this one (secrets {fingerprint}): \
             restoring it would give this cluster another cluster's objects, whose Secrets and \
             tokens its keys cannot read",
            self.cluster, self.secrets
        ))
    }
}
