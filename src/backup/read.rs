//! A snapshot read back for a restore: decrypted with the user's age
//! identity file (`age-keygen`'s output), and etcd's SHA-256 at its end
//! checked against the database before it, so that a damaged file is
//! refused before anything is sent to a node.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::BackupError;

/// `restore_from`: a snapshot, and the age identity file that opens it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreFrom {
    pub snapshot: PathBuf,
    pub identity_file: PathBuf,
}

/// A snapshot read back: etcd's bytes, and which file they came from.
pub struct Restored {
    /// The snapshot as etcd gave it (database and hash), its hash checked.
    pub snapshot: Vec<u8>,
    /// [`RestoreFrom::fingerprint`] of the file read.
    pub fingerprint: String,
}

impl RestoreFrom {
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
fn decrypt<R: std::io::BufRead>(
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
