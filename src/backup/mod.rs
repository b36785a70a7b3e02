//! etcd snapshots as hct keeps them: checked, encrypted to the user's age
//! recipients, and written to the local directory the user named.
//!
//! - [`Recipients`]: the age recipients (`age1…`), parsed once.
//! - [`SnapshotFile`]: a snapshot on its way to disk, chunk after chunk
//!   as the Talos API streams it: etcd's SHA-256 at its end is checked, the
//!   bytes are encrypted as they come, and the file appears under its name
//!   only when whole (never a partial snapshot under a snapshot's name).
//! - [`RestoreFrom`]: a snapshot read back for a restore (from the bucket
//!   or a file), decrypted with an age identity file and its hash checked.
//! - [`SnapshotFacts`]: whose snapshot it is, when and from where, beside
//!   it as `<snapshot>.json`; a restore checks it is this cluster's.
//! - [`snapshot_name`]: one grammar for the names.
//! - [`Destination`]: where they are kept, a local directory or a
//!   [`Bucket`] (S3-compatible, `bucket.rs`); [`snapshots`]: what a bucket
//!   holds, newest first.
//! - [`secrets_name`], [`encrypt`], [`latest_secrets`]: the machine secrets
//!   kept beside the snapshots (`secrets.rs`).
//!
//! No I/O but local files and the bucket's; no Terraform values.

mod bucket;
mod catalog;
mod destination;
mod facts;
mod read;
mod secrets;
mod writer;

use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use bucket::{Bucket, BucketConfig, Listed, hetzner_endpoint};
pub use catalog::{Catalogued, SNAPSHOT_SUFFIX, snapshots};
pub use destination::{Destination, Staging};
pub use facts::{SnapshotFacts, facts_path};
pub use read::{LocalSnapshot, RestoreFrom, Restored, SnapshotAt};
pub use secrets::{SECRETS_SUFFIX, encrypt, latest_secrets, secrets_name};
pub use writer::SnapshotFile;

/// What can go wrong with a snapshot on hct's side.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(
        "{recipient:?} is not an age X25519 recipient ({reason}); expected `age1…`, as `age-keygen` prints it"
    )]
    Recipient {
        recipient: String,
        reason: &'static str,
    },
    #[error(
        "no age recipient: a snapshot holds every Secret of the cluster and is never written unencrypted"
    )]
    NoRecipient,
    #[error("writing the snapshot to {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the snapshot is cut short or damaged: {0}")]
    Damaged(&'static str),
    #[error("{path}: no age identity file ({reason}); expected `age-keygen`'s output")]
    Identity { path: PathBuf, reason: String },
    #[error("{path}: cannot be decrypted with the identity file: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("bucket {bucket:?}{}: {reason}", if key.is_empty() { String::new() } else { format!(" at {key:?}") })]
    Bucket {
        bucket: String,
        key: String,
        reason: String,
        /// The server or the network may answer otherwise later (a
        /// connection failure, 5xx, 429): worth another attempt.
        transient: bool,
    },
}

impl BackupError {
    /// Whether another attempt may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Bucket {
                transient: true,
                ..
            }
        )
    }
}

/// The age recipients snapshots are encrypted to.
#[derive(Clone)]
pub struct Recipients(Vec<age::x25519::Recipient>);

impl Recipients {
    /// Parses each recipient; Err names the first that is not one.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Self, BackupError> {
        if texts.is_empty() {
            return Err(BackupError::NoRecipient);
        }
        texts
            .iter()
            .map(|text| {
                let text = text.as_ref().trim();
                age::x25519::Recipient::from_str(text).map_err(|reason| BackupError::Recipient {
                    recipient: text.to_string(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    fn iter(&self) -> impl Iterator<Item = &dyn age::Recipient> {
        self.0.iter().map(|r| r as &dyn age::Recipient)
    }
}

impl std::fmt::Debug for Recipients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|r| r.to_string()))
            .finish()
    }
}

/// A snapshot as written: where, and how many bytes of etcd's it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub path: PathBuf,
    /// The snapshot's size before encryption (etcd's database and hash).
    pub bytes: u64,
}

/// Why a snapshot was taken, as its name says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Before a change that puts a running control plane at risk.
    PreChange,
    /// When a person asked (the `hct_etcd_snapshot` action).
    OnDemand,
}

impl Why {
    pub fn as_str(self) -> &'static str {
        match self {
            Why::PreChange => "pre-change",
            Why::OnDemand => "on-demand",
        }
    }
}

/// `<cluster>-<UTC time>-<why>.etcd.age`, e.g.
/// `demo-20261207T045012Z-pre-change.etcd.age`: sorts by time per cluster.
pub fn snapshot_name(cluster: &str, at: time::OffsetDateTime, why: Why) -> String {
    let why = why.as_str();
    let compact: String = utc(at)
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("{cluster}-{compact}-{why}{SNAPSHOT_SUFFIX}")
}

/// `at` in UTC as RFC 3339 to the second: `2026-12-07T04:50:12Z`.
pub fn utc(at: time::OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// A new owner-only temporary directory (removed when dropped).
fn temporary_dir(prefix: &str) -> Result<tempfile::TempDir, BackupError> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|source| BackupError::Io {
            path: std::env::temp_dir(),
            source,
        })
}

/// The directory a snapshot goes to, made (owner-only) if missing.
pub fn ensure_directory(dir: &Path) -> Result<(), BackupError> {
    let io = |source| BackupError::Io {
        path: dir.to_path_buf(),
        source,
    };
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(io)
}

#[cfg(test)]
mod tests;
