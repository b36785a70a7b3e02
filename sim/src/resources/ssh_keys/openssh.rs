//! OpenSSH public keys (`TYPE BASE64 [COMMENT]`): checking that the key data
//! holds a key of the named type, and its MD5 fingerprint.

use base64::Engine;
use md5::{Digest, Md5};

/// The MD5 fingerprint of an OpenSSH public key, `aa:bb:…`, as Hetzner shows it.
pub fn fingerprint(public_key: &str) -> Result<String, String> {
    let mut parts = public_key.split_whitespace();
    let (Some(kind), Some(blob)) = (parts.next(), parts.next()) else {
        return Err("must be an OpenSSH public key: TYPE BASE64 [COMMENT]".into());
    };
    let blob = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|_| "key data is not valid base64".to_string())?;
    // The blob starts with its own type name as a length-prefixed string.
    let declared = blob
        .get(..4)
        .map(|n| u32::from_be_bytes([n[0], n[1], n[2], n[3]]) as usize)
        .and_then(|len| blob.get(4..4 + len));
    if declared != Some(kind.as_bytes()) {
        return Err(format!("key data does not hold a {kind} key"));
    }
    let digest = Md5::digest(&blob);
    Ok(digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":"))
}
