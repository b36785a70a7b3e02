//! The cluster's machine secrets (`secrets.yaml`: the CAs and keys every
//! machine config is made from, the talosconfig's CA above all) kept beside
//! its snapshots, encrypted to the same age recipients: with the bucket and
//! an identity, a lost Terraform state is imported back and a restore needs
//! nothing else.
//!
//! Each version is its own object, `<cluster>-machine-secrets-<hash>.yaml.age`
//! (`<hash>`: the first 16 hex digits of the SHA-256 of the YAML, so a
//! rotation leaves the old one in place), written again on every apply: the
//! newest stored is the one in use, encrypted to the recipients of today.

use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::read::decrypt;
use super::{BackupError, Bucket, Listed, Recipients};

const INFIX: &str = "-machine-secrets-";
pub const SECRETS_SUFFIX: &str = ".yaml.age";

/// The name of this version of the cluster's secrets.
pub fn secrets_name(cluster: &str, yaml: &str) -> String {
    let digest = Sha256::digest(yaml.as_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{cluster}{INFIX}{hash}{SECRETS_SUFFIX}")
}

/// `plain`, age-encrypted to `recipients`.
pub fn encrypt(plain: &[u8], recipients: &Recipients) -> Result<Vec<u8>, BackupError> {
    let encryptor =
        age::Encryptor::with_recipients(recipients.iter()).map_err(|_| BackupError::NoRecipient)?;
    let io = |source| BackupError::Io {
        path: "machine secrets".into(),
        source,
    };
    let mut out = Vec::new();
    let mut writer = encryptor.wrap_output(&mut out).map_err(io)?;
    writer.write_all(plain).map_err(io)?;
    writer.finish().map_err(io)?;
    Ok(out)
}

/// The newest secrets of `cluster` among `listed` (the bucket's objects,
/// by the time the bucket stored them: each apply writes the secrets in
/// use again), decrypted with `identity_file`: their location and YAML.
pub async fn latest_secrets(
    bucket: &Bucket,
    listed: &[Listed],
    cluster: &str,
    identity_file: &Path,
) -> Result<Option<(String, String)>, BackupError> {
    let start = bucket.key(&format!("{cluster}{INFIX}"));
    let newest = listed
        .iter()
        .filter(|o| o.key.starts_with(&start) && o.key.ends_with(SECRETS_SUFFIX))
        .max_by(|a, b| a.last_modified.cmp(&b.last_modified));
    let Some(newest) = newest else {
        return Ok(None);
    };
    let location = bucket.location(&newest.key);
    let Some(encrypted) = bucket.get(&newest.key).await? else {
        return Ok(None);
    };
    let mut yaml = String::new();
    decrypt(encrypted.as_slice(), Path::new(&location), identity_file)?
        .read_to_string(&mut yaml)
        .map_err(|e| BackupError::Unreadable {
            path: location.clone().into(),
            reason: e.to_string(),
        })?;
    Ok(Some((location, yaml)))
}
