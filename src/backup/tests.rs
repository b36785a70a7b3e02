use std::io::Read;

use sha2::{Digest, Sha256};

use super::*;

fn with_hash(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&Sha256::digest(body));
    out
}

fn keys() -> (age::x25519::Identity, Recipients) {
    let identity = age::x25519::Identity::generate();
    let recipients = Recipients::parse(&[identity.to_public().to_string()]).unwrap();
    (identity, recipients)
}

fn decrypt(identity: &age::x25519::Identity, path: &Path) -> Vec<u8> {
    let file = std::fs::File::open(path).unwrap();
    let decryptor = age::Decryptor::new(file).unwrap();
    let mut reader = decryptor
        .decrypt(std::iter::once(identity as &dyn age::Identity))
        .unwrap();
    let mut out = Vec::new();
    reader.read_to_end(&mut out).unwrap();
    out
}

#[test]
fn a_whole_snapshot_lands_encrypted_and_decrypts_to_what_etcd_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (identity, recipients) = keys();
    let snapshot = with_hash(&[7u8; 100_000]);
    let mut file = SnapshotFile::create(dir.path(), "c.etcd.age", &recipients).unwrap();
    // Chunks that split the hash.
    for chunk in snapshot.chunks(99_990) {
        file.write(chunk).unwrap();
    }
    let stored = file.finish().unwrap();
    assert_eq!(stored.path, dir.path().join("c.etcd.age"));
    assert_eq!(stored.bytes, snapshot.len() as u64);
    let on_disk = std::fs::read(&stored.path).unwrap();
    assert!(on_disk.starts_with(b"age-encryption.org/v1\n"));
    assert!(!on_disk.windows(64).any(|w| w == [7u8; 64]));
    assert_eq!(decrypt(&identity, &stored.path), snapshot);
    // Nothing else is left in the directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_damaged_or_short_snapshot_is_refused_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, recipients) = keys();
    let mut damaged = with_hash(b"etcd database");
    damaged[0] ^= 1;
    for stream in [damaged, vec![1u8; 20], with_hash(b"")] {
        let mut file = SnapshotFile::create(dir.path(), "c.etcd.age", &recipients).unwrap();
        file.write(&stream).unwrap();
        assert!(matches!(file.finish(), Err(BackupError::Damaged(_))));
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn recipients_are_age_x25519_ones() {
    let (_, good) = keys();
    assert_eq!(format!("{good:?}").matches("age1").count(), 1);
    assert!(matches!(
        Recipients::parse::<&str>(&[]),
        Err(BackupError::NoRecipient)
    ));
    let bad = Recipients::parse(&["ssh-ed25519 AAAA"]).unwrap_err();
    assert!(
        bad.to_string()
            .contains("\"ssh-ed25519 AAAA\" is not an age X25519 recipient")
    );
}

#[test]
fn names_sort_by_time_and_say_why() {
    let at = time::OffsetDateTime::from_unix_timestamp(1_796_619_012).unwrap();
    assert_eq!(
        snapshot_name("demo", at, Why::PreChange),
        "demo-20261207T045012Z-pre-change.etcd.age"
    );
}

#[test]
fn a_snapshot_reads_back_with_an_identity_of_a_recipient_only() {
    use age::secrecy::ExposeSecret;
    let dir = tempfile::tempdir().unwrap();
    let (identity, recipients) = keys();
    let snapshot = with_hash(&[3u8; 5000]);
    let mut file = SnapshotFile::create(dir.path(), "c.etcd.age", &recipients).unwrap();
    file.write(&snapshot).unwrap();
    let stored = file.finish().unwrap();
    let key = dir.path().join("key.txt");
    std::fs::write(
        &key,
        format!("# a comment\n{}\n", identity.to_string().expose_secret()),
    )
    .unwrap();
    let from = |identity_file: &Path| {
        LocalSnapshot::file(stored.path.clone(), identity_file.to_path_buf())
    };
    from(&key).check_readable().unwrap();
    let restored = from(&key).read().unwrap();
    assert_eq!(restored.snapshot, snapshot);
    assert_eq!(restored.fingerprint, from(&key).fingerprint().unwrap());

    let other = dir.path().join("other.txt");
    let stranger = age::x25519::Identity::generate();
    std::fs::write(&other, stranger.to_string().expose_secret()).unwrap();
    let refused = from(&other).check_readable().unwrap_err();
    assert!(
        matches!(refused, BackupError::Unreadable { .. }),
        "{refused}"
    );
    let not_a_key = dir.path().join("not.txt");
    std::fs::write(&not_a_key, "hello\n").unwrap();
    assert!(matches!(
        from(&not_a_key).read(),
        Err(BackupError::Identity { .. })
    ));
    let missing = LocalSnapshot::file(dir.path().join("missing"), key.clone());
    assert!(matches!(missing.read(), Err(BackupError::Io { .. })));
}

#[test]
fn facts_sit_beside_the_snapshot_and_tell_its_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("c-20261207T045012Z-pre-change.etcd.age");
    let facts = SnapshotFacts {
        cluster: "c".into(),
        secrets: "0123456789abcdef".into(),
        taken_at: utc(time::OffsetDateTime::from_unix_timestamp(1_796_619_012).unwrap()),
        node: "c-cp-1".into(),
        bytes: 42,
        talos_version: "v1.14.0".into(),
        kubernetes_version: None,
    };
    assert_eq!(facts.taken_at, "2026-12-07T04:50:12Z");
    assert_eq!(SnapshotFacts::read(&snapshot).unwrap(), None, "none yet");
    facts.write(&snapshot).unwrap();
    assert_eq!(
        facts_path(&snapshot),
        dir.path()
            .join("c-20261207T045012Z-pre-change.etcd.age.json")
    );
    assert!(facts.write(&snapshot).is_err(), "never over a file");
    let read = SnapshotFacts::read(&snapshot).unwrap().unwrap();
    assert_eq!(read, facts);
    read.check_cluster("0123456789abcdef").unwrap();
    let why = read.check_cluster("fedcba9876543210").unwrap_err();
    assert!(
        why.contains("of cluster c (secrets 0123456789abcdef)"),
        "{why}"
    );
}

#[tokio::test]
async fn secrets_are_kept_per_version_encrypted_to_the_recipients_of_the_day() {
    let dir = tempfile::tempdir().unwrap();
    let (identity, recipients) = keys();
    let destination = Destination::Directory(dir.path().join("snapshots"));
    let yaml = "cluster:\n  id: abc\n";
    let name = secrets_name("demo", yaml);
    assert!(
        name.starts_with("demo-machine-secrets-") && name.ends_with(SECRETS_SUFFIX),
        "{name}"
    );
    assert_eq!(
        name.len(),
        "demo-machine-secrets-".len() + 16 + SECRETS_SUFFIX.len()
    );
    assert_ne!(name, secrets_name("demo", "cluster:\n  id: abd\n"));

    let first = encrypt(yaml.as_bytes(), &recipients).unwrap();
    assert!(!first.windows(3).any(|w| w == b"abc"), "never in the clear");
    let kept = destination.keep_small(&name, first).await.unwrap();
    let path = dir.path().join("snapshots").join(&name);
    assert_eq!(kept, path.display().to_string());
    assert_eq!(decrypt(&identity, &path), yaml.as_bytes());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "owner-only");
    }
    // New recipients: the same version, encrypted to them in its place.
    let (other, others) = keys();
    let again = encrypt(yaml.as_bytes(), &others).unwrap();
    destination.keep_small(&name, again).await.unwrap();
    assert_eq!(decrypt(&other, &path), yaml.as_bytes());
    let files: Vec<_> = std::fs::read_dir(dir.path().join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        files,
        [std::ffi::OsString::from(&name)],
        "no temporary file left"
    );
}
