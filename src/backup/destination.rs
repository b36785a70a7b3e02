//! Where snapshots are kept: a local directory, or a bucket. Either way a
//! snapshot is first written whole to a local file (in the directory
//! itself, or in a temporary one removed afterwards), then kept with its
//! facts beside it: `<snapshot>.json` in the directory, `<key>.json` in the
//! bucket.

use std::path::{Path, PathBuf};

use super::{BackupError, Bucket, SnapshotFacts, Stored, ensure_directory, temporary_dir};

#[derive(Debug, Clone)]
pub enum Destination {
    Directory(PathBuf),
    Bucket(Bucket),
}

/// The local directory a snapshot's file is written in; a temporary one
/// goes when this is dropped.
pub struct Staging {
    dir: PathBuf,
    _temporary: Option<tempfile::TempDir>,
}

impl Staging {
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Destination {
    /// Whether a snapshot can be kept: the bucket answers to its keys.
    pub async fn check(&self) -> Result<(), BackupError> {
        match self {
            Self::Directory(_) => Ok(()),
            Self::Bucket(bucket) => bucket.check_access().await,
        }
    }

    pub fn stage(&self) -> Result<Staging, BackupError> {
        match self {
            Self::Directory(dir) => {
                ensure_directory(dir)?;
                Ok(Staging {
                    dir: dir.clone(),
                    _temporary: None,
                })
            }
            Self::Bucket(_) => {
                let temporary = temporary_dir("hct-etcd-snapshot-")?;
                Ok(Staging {
                    dir: temporary.path().to_path_buf(),
                    _temporary: Some(temporary),
                })
            }
        }
    }

    /// Keeps `encrypted` as `name` unless an object or file of that name
    /// is there already; where it went, when it was written.
    pub async fn keep_once(
        &self,
        name: &str,
        encrypted: Vec<u8>,
    ) -> Result<Option<String>, BackupError> {
        match self {
            Self::Directory(dir) => {
                ensure_directory(dir)?;
                let path = dir.join(name);
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let io = |source| BackupError::Io {
                    path: path.clone(),
                    source,
                };
                let mut file = match options.open(&path) {
                    Ok(file) => file,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
                    Err(e) => return Err(io(e)),
                };
                std::io::Write::write_all(&mut file, &encrypted).map_err(io)?;
                file.sync_all().map_err(io)?;
                Ok(Some(path.display().to_string()))
            }
            Self::Bucket(bucket) => {
                let key = bucket.key(name);
                if bucket.get(&key).await?.is_some() {
                    return Ok(None);
                }
                bucket.put_bytes(&key, encrypted).await?;
                Ok(Some(bucket.location(&key)))
            }
        }
    }

    /// Keeps a snapshot written in [`Self::stage`]'s directory with its
    /// facts; returns where it is (a path, or `s3://<bucket>/<key>`). For a
    /// bucket, it can be called again after a failure: each put replaces
    /// the object of the same key with the same bytes.
    pub async fn keep(
        &self,
        stored: &Stored,
        facts: &SnapshotFacts,
    ) -> Result<String, BackupError> {
        let bucket = match self {
            Self::Directory(_) => {
                facts.write(&stored.path)?;
                return Ok(stored.path.display().to_string());
            }
            Self::Bucket(bucket) => bucket,
        };
        let name = stored
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let key = bucket.key(&name);
        bucket.put_file(&key, &stored.path).await?;
        bucket
            .put_bytes(&format!("{key}.json"), facts.to_json())
            .await?;
        Ok(bucket.location(&key))
    }
}
