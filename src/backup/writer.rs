//! A snapshot written as it streams in: encrypted chunk by chunk into a
//! hidden temporary file beside its destination, etcd's trailing SHA-256
//! checked against the bytes before it, then renamed into place. Dropped
//! unfinished, the temporary file goes with it.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;

use super::read::HASH_LEN;
use super::{BackupError, Recipients, Stored};

pub struct SnapshotFile {
    path: PathBuf,
    out: age::stream::StreamWriter<NamedTempFile>,
    hasher: Sha256,
    /// The last bytes seen: the hash, if the stream ends here.
    tail: Vec<u8>,
    bytes: u64,
}

impl SnapshotFile {
    /// Starts `dir/name` (the directory must exist), encrypted to
    /// `recipients`.
    pub fn create(dir: &Path, name: &str, recipients: &Recipients) -> Result<Self, BackupError> {
        let path = dir.join(name);
        let io = |source| BackupError::Io {
            path: path.clone(),
            source,
        };
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            .tempfile_in(dir)
            .map_err(io)?;
        let encryptor = age::Encryptor::with_recipients(recipients.iter())
            .map_err(|_| BackupError::NoRecipient)?;
        let out = encryptor.wrap_output(file).map_err(io)?;
        Ok(Self {
            path,
            out,
            hasher: Sha256::new(),
            tail: Vec::with_capacity(2 * HASH_LEN),
            bytes: 0,
        })
    }

    /// Adds the next chunk of the stream.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), BackupError> {
        self.bytes += chunk.len() as u64;
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > HASH_LEN {
            let settled = self.tail.len() - HASH_LEN;
            self.hasher.update(&self.tail[..settled]);
            self.tail.drain(..settled);
        }
        self.out.write_all(chunk).map_err(|source| BackupError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Checks etcd's hash, and puts the file in place.
    pub fn finish(self) -> Result<Stored, BackupError> {
        if self.tail.len() < HASH_LEN || self.bytes == HASH_LEN as u64 {
            return Err(BackupError::Damaged("shorter than etcd's hash"));
        }
        if self.hasher.finalize().as_slice() != self.tail.as_slice() {
            return Err(BackupError::Damaged(
                "the SHA-256 at its end does not match its database",
            ));
        }
        let io = |source| BackupError::Io {
            path: self.path.clone(),
            source,
        };
        let file = self.out.finish().map_err(io)?;
        file.as_file().sync_all().map_err(io)?;
        // Never over another snapshot (names change once a second).
        file.persist_noclobber(&self.path)
            .map_err(|e| io(e.error))?;
        Ok(Stored {
            path: self.path,
            bytes: self.bytes,
        })
    }
}
