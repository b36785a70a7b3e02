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

    /// Keeps the small file `encrypted` as `name`, in place of one of that
    /// name (written whole, then renamed: never half a file under the
    /// name); where it went.
    pub async fn keep_small(&self, name: &str, encrypted: Vec<u8>) -> Result<String, BackupError> {
        match self {
            Self::Directory(dir) => {
                ensure_directory(dir)?;
                let path = dir.join(name);
                let io = |source| BackupError::Io {
                    path: path.clone(),
                    source,
                };
                // tempfile's files are owner-only.
                let mut file = tempfile::Builder::new()
                    .prefix(&format!(".{name}."))
                    .tempfile_in(dir)
                    .map_err(io)?;
                std::io::Write::write_all(&mut file, &encrypted).map_err(io)?;
                file.as_file().sync_all().map_err(io)?;
                file.persist(&path).map_err(|e| io(e.error))?;
                Ok(path.display().to_string())
            }
            Self::Bucket(bucket) => {
                let key = bucket.key(name);
                bucket.put_bytes(&key, encrypted).await?;
                Ok(bucket.location(&key))
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
