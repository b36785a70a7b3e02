//! Tests of SSH keys: fingerprints, and the uniqueness of names and keys.
//! `test_key` makes valid public keys.

use base64::Engine;

use super::*;
use crate::state::World;

/// A syntactically valid ed25519 public key whose key bytes are all `fill`.
pub(crate) fn test_key(fill: u8) -> String {
    let mut blob = Vec::new();
    blob.extend_from_slice(&11u32.to_be_bytes());
    blob.extend_from_slice(b"ssh-ed25519");
    blob.extend_from_slice(&32u32.to_be_bytes());
    blob.extend_from_slice(&[fill; 32]);
    let data = base64::engine::general_purpose::STANDARD.encode(blob);
    format!("ssh-ed25519 {data} test@hct")
}

#[test]
fn fingerprints_openssh_keys() {
    let fp = fingerprint(&test_key(7)).unwrap();
    assert_eq!(fp.len(), 47);
    assert_eq!(fp.matches(':').count(), 15);
    assert_ne!(fp, fingerprint(&test_key(8)).unwrap());
    assert!(fingerprint("ssh-ed25519").is_err());
    assert!(fingerprint("ssh-rsa !!!").is_err());
    let wrong_type = test_key(7).replacen("ssh-ed25519", "ssh-rsa", 1);
    assert!(fingerprint(&wrong_type).is_err());
}

#[test]
fn names_and_fingerprints_are_unique() {
    let mut world = World::default();
    let now = Timestamp::now();
    world
        .create_ssh_key("a".into(), test_key(1), Labels::new(), now)
        .unwrap();
    let same_name = world
        .create_ssh_key("a".into(), test_key(2), Labels::new(), now)
        .unwrap_err();
    assert_eq!(same_name.code(), "uniqueness_error");
    let same_key = world
        .create_ssh_key("b".into(), test_key(1), Labels::new(), now)
        .unwrap_err();
    assert_eq!(same_key.code(), "uniqueness_error");
    let bad = world
        .create_ssh_key("c".into(), "nonsense".into(), Labels::new(), now)
        .unwrap_err();
    assert_eq!(bad.code(), "invalid_input");
}
