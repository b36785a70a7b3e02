//! A snapshot read back for a restore: fetched from the bucket when it is
//! there (with its facts, into a temporary directory), decrypted with the
//! user's age identity file (`age-keygen`'s output), and etcd's SHA-256 at
//! its end checked against the database before it, so that a damaged file
//! is refused before anything is sent to a node.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{BackupError, Bucket, facts_path, temporary_dir};

/// `restore_from`: where the snapshot is, and the age identity file that
/// opens it.
#[derive(Debug, Clone)]
pub struct RestoreFrom {
    pub snapshot: SnapshotAt,
    pub identity_file: PathBuf,
}

/// Where a snapshot to restore is.
#[derive(Debug, Clone)]
pub enum SnapshotAt {
    File(PathBuf),
    /// `s3://<bucket>/<key>`, in the bucket of `etcd_backup`.
    Bucket {
        bucket: Bucket,
        key: String,
    },
}

impl RestoreFrom {
    /// As the configuration names it: a path or `s3://<bucket>/<key>`.
    pub fn location(&self) -> String {
        match &self.snapshot {
            SnapshotAt::File(path) => path.display().to_string(),
            SnapshotAt::Bucket { bucket, key } => bucket.location(key),
        }
    }

    /// The snapshot as a local file (and its facts beside it, when there
    /// are): itself, or downloaded into a temporary directory that goes
    /// with the [`LocalSnapshot`].
    pub async fn fetch(&self) -> Result<LocalSnapshot, BackupError> {
        let (bucket, key) = match &self.snapshot {
            SnapshotAt::File(path) => {
                return Ok(LocalSnapshot {
                    snapshot: path.clone(),
                    identity_file: self.identity_file.clone(),
                    _temporary: None,
                });
            }
            SnapshotAt::Bucket { bucket, key } => (bucket, key),
        };
        let temporary = temporary_dir("hct-etcd-restore-")?;
        let name = key.rsplit('/').next().unwrap_or(key);
        let snapshot = temporary.path().join(name);
        if !bucket.download(key, &snapshot).await? {
            return Err(BackupError::Bucket {
                bucket: bucket.name().to_string(),
                key: key.clone(),
                reason: "no such object".to_string(),
                transient: false,
            });
        }
        bucket
            .download(&format!("{key}.json"), &facts_path(&snapshot))
            .await?;
        Ok(LocalSnapshot {
            snapshot,
            identity_file: self.identity_file.clone(),
            _temporary: Some(temporary),
        })
    }
}

/// A snapshot to restore as a local file.
#[derive(Debug)]
pub struct LocalSnapshot {
    pub snapshot: PathBuf,
    pub identity_file: PathBuf,
    _temporary: Option<tempfile::TempDir>,
}

/// A snapshot read back: etcd's bytes, and which file they came from.
pub struct Restored {
    /// The snapshot as etcd gave it (database and hash), its hash checked.
    pub snapshot: Vec<u8>,
    /// [`LocalSnapshot::fingerprint`] of the file read.
    pub fingerprint: String,
}

impl LocalSnapshot {
    /// A local file as it is.
    pub fn file(snapshot: PathBuf, identity_file: PathBuf) -> Self {
        Self {
            snapshot,
            identity_file,
            _temporary: None,
        }
    }

    /// `sha256:<hex>` of the encrypted file: which snapshot this is, so
    /// that one restored is never restored again.
    pub fn fingerprint(&self) -> Result<String, BackupError> {
        Ok(fingerprint_of(&self.encrypted()?))
    }

    /// Whether the identity file opens the snapshot (its header only:
    /// cheap enough for a plan).
    pub fn check_readable(&self) -> Result<(), BackupError> {
        let file = std::fs::File::open(&self.snapshot).map_err(|source| BackupError::Io {
            path: self.snapshot.clone(),
            source,
        })?;
        decrypt(
            std::io::BufReader::new(file),
            &self.snapshot,
            &self.identity_file,
        )
        .map(|_| ())
    }

    /// The snapshot, decrypted and its hash checked, and its fingerprint:
    /// the file is read once.
    pub fn read(&self) -> Result<Restored, BackupError> {
        let encrypted = self.encrypted()?;
        let mut snapshot = Vec::new();
        decrypt(encrypted.as_slice(), &self.snapshot, &self.identity_file)?
            .read_to_end(&mut snapshot)
            .map_err(|e| BackupError::Unreadable {
                path: self.snapshot.clone(),
                reason: e.to_string(),
            })?;
        check_hash(&snapshot)?;
        Ok(Restored {
            snapshot,
            fingerprint: fingerprint_of(&encrypted),
        })
    }

    fn encrypted(&self) -> Result<Vec<u8>, BackupError> {
        std::fs::read(&self.snapshot).map_err(|source| BackupError::Io {
            path: self.snapshot.clone(),
            source,
        })
    }
}

fn fingerprint_of(encrypted: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(encrypted))
}

/// etcd ends a snapshot with the SHA-256 of the database before it.
pub(super) const HASH_LEN: usize = 32;

/// `encrypted` (the file at `snapshot`) decrypted with the identities of
/// `identity_file`, not read yet: fails early when it is no age file or
/// none of the identities opens it.
pub(super) fn decrypt<R: std::io::BufRead>(
    encrypted: R,
    snapshot: &Path,
    identity_file: &Path,
) -> Result<impl Read, BackupError> {
    let identities = age::IdentityFile::from_file(identity_file.display().to_string())
        .map_err(|source| match source.kind() {
            // Read, but not an identity file.
            std::io::ErrorKind::InvalidData => BackupError::Identity {
                path: identity_file.to_path_buf(),
                reason: source.to_string(),
            },
            _ => BackupError::Io {
                path: identity_file.to_path_buf(),
                source,
            },
        })?
        .into_identities()
        .map_err(|e| BackupError::Identity {
            path: identity_file.to_path_buf(),
            reason: e.to_string(),
        })?;
    let decryptor =
        age::Decryptor::new_buffered(encrypted).map_err(|e| BackupError::Unreadable {
            path: snapshot.to_path_buf(),
            reason: e.to_string(),
        })?;
    decryptor
        .decrypt(identities.iter().map(|i| i.as_ref() as &dyn age::Identity))
        .map_err(|e| BackupError::Unreadable {
            path: snapshot.to_path_buf(),
            reason: e.to_string(),
        })
}

/// etcd's hash at the end of `snapshot` matches the database before it.
pub(super) fn check_hash(snapshot: &[u8]) -> Result<(), BackupError> {
    if snapshot.len() <= HASH_LEN {
        return Err(BackupError::Damaged("shorter than etcd's hash"));
    }
    let (database, hash) = snapshot.split_at(snapshot.len() - HASH_LEN);
    if Sha256::digest(database).as_slice() != hash {
        return Err(BackupError::Damaged(
            "the SHA-256 at its end does not match its database",
        ));
    }
    Ok(())
}
