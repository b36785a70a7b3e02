//! Talos' etcd disaster recovery (read in siderolabs/talos: machined's
//! `EtcdRecover` and `Bootstrap`, and its etcd service's
//! `recoverFromSnapshot`): a snapshot (as EtcdSnapshot gives it) is
//! uploaded with `EtcdRecover`, then `Bootstrap` with `recover_etcd` starts
//! etcd from it as a new single-member cluster, which the other control
//! planes join as after any Bootstrap.
//!
//! - `EtcdRecover` (os:admin only; `api`): a configured control plane
//!   (else Unimplemented, as Talos' `CheckControlplane`) takes the stream
//!   whatever its etcd holds, and keeps it as `/var/lib/etcd.snapshot` on
//!   EPHEMERAL (`Disk::etcd_snapshot`: it lasts through reboots and goes
//!   with a reset), replacing any earlier one.
//! - `Bootstrap` with `recover_etcd` is refused as any Bootstrap (a worker,
//!   etcd data not empty: AlreadyExists). Otherwise Talos answers at once
//!   and its etcd service then restores the snapshot before it starts; a
//!   restore that fails leaves the service Failed (ServiceList), not the
//!   call. So here: no snapshot uploaded, or one that is no database (its
//!   `snapshot status` fails), leaves the etcd service Failed and the data
//!   directory empty (Bootstrap may be called again); a hash that does not
//!   match, or none without `recover_skip_hash_check` (etcdutl finds that
//!   after copying the database into the data directory), leaves etcd
//!   Failed and the data directory spoiled: Bootstrap then finds it not
//!   empty until a reset. A restore that succeeds removes the snapshot.
//! - The data: an emulated ring's store is the uploaded stand-in (the JSON
//!   of a `ClusterStore` and its SHA-256, `etcd_snapshot`), restored as the
//!   Bootstrap is taken; Talos' bootstrap manifests are then created where
//!   missing, as on every Bootstrap (restored objects stay as they were). A
//!   ring with real components takes a real snapshot (a bbolt database and
//!   its SHA-256; its hash is checked here as etcdutl checks it), restored
//!   with `etcdutl snapshot restore` before its founder's real etcd member
//!   first starts (`kube_control_plane::restore`).

pub mod api;
pub mod disk;

pub use self::disk::{RealRestore, Recovery, Upload};

use sha2::{Digest, Sha256};
use tonic::Code;

use super::calls::{self, CallError, NodeRef};
use super::etcd_snapshot::HASH_LEN;
use super::kube_api::store::store_id;
use super::kube_control_plane::spec::runs_real;
use crate::kube::store::ClusterStore;
use crate::state::World;

/// Where Talos keeps the uploaded snapshot.
pub const SNAPSHOT_PATH: &str = "/var/lib/etcd.snapshot";
/// The largest upload kept (a real etcd's snapshot is some megabytes to a
/// few hundred; etcd's own default quota is 2 GiB).
pub const MAX_UPLOAD: usize = 1 << 30;
/// bbolt's magic, in each meta page (at byte 16 of page 0, little-endian).
const BBOLT_MAGIC: u32 = 0xED0C_DAED;
/// etcdutl's test for a hash at the end: the size is a multiple of 512
/// (a disk sector) plus the hash.
const SECTOR: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(
        "error writing snapshot: write {SNAPSHOT_PATH}: no space left on device (hct-sim keeps at most {MAX_UPLOAD} bytes)"
    )]
    TooLarge,
}

impl RecoverError {
    pub fn code(&self) -> Code {
        match self {
            Self::Call(e) => e.code(),
            // Talos wraps a write error with fmt.Errorf: no gRPC code.
            Self::TooLarge => Code::Unknown,
        }
    }
}

/// EtcdRecover's checks before the upload: a configured control plane.
pub fn accepts(world: &World, at: NodeRef) -> Result<(), CallError> {
    let (_, talos) = calls::node(world, at)?;
    if !calls::configured(talos, "EtcdRecover")?.is_control_plane() {
        return Err(CallError::ControlPlaneOnly("etcd recover"));
    }
    Ok(())
}

/// Keeps `snapshot` as node `at`'s uploaded snapshot (if it is still the
/// start the upload began on), replacing any earlier one.
pub fn keep(world: &mut World, at: NodeRef, snapshot: Vec<u8>) -> Result<(), CallError> {
    accepts(world, at)?;
    calls::node_mut(world, at)?.node.disk.etcd_snapshot = Some(Upload::new(snapshot));
    Ok(())
}

/// Bootstrap with `recover_etcd` on node `at`; `release` is that of the
/// real components hct-sim runs, if any. Refused as any Bootstrap; a
/// restore that fails is not the call's error (see the module's header).
pub fn bootstrap(
    world: &mut World,
    at: NodeRef,
    skip_hash_check: bool,
    release: Option<&str>,
) -> Result<(), CallError> {
    let config = calls::may_bootstrap(world, at)?;
    let (_, talos) = calls::node(world, at)?;
    let real = release.is_some_and(|r| runs_real(&config, r));
    let snapshot = talos.node.disk.etcd_snapshot.clone();
    let ring = fastrand::u64(1..);
    let restored = match &snapshot {
        None => Err(Failure::PreStage(format!(
            "error verifying snapshot: stat {SNAPSHOT_PATH}: no such file or directory"
        ))),
        Some(s) if real => real_check(s.bytes(), skip_hash_check).map(|()| None),
        Some(s) => emulated_store(s.bytes(), skip_hash_check).map(Some),
    };
    let restored = match restored {
        Ok(Some(store)) => {
            world.kube.insert(&store_id(&config.cluster, ring), store);
            Ok(None)
        }
        Ok(None) => Ok(Some(RealRestore { skip_hash_check })),
        Err(failure) => Err(failure),
    };
    let node = &mut calls::node_mut(world, at)?.node;
    node.run.etcd_failed = None;
    match restored {
        Ok(real) => {
            node.disk.etcd.founder = true;
            node.disk.etcd.recovery = Some(Recovery { ring, real });
            if real.is_none() {
                node.disk.etcd_snapshot = None;
            }
        }
        Err(Failure::PreStage(why)) => node.run.etcd_failed = Some(service_message(&why)),
        Err(Failure::Spoiled(why)) => node.disk.etcd.spoiled = Some(service_message(&why)),
    }
    Ok(())
}

/// How a restore fails: before it wrote anything, or after.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    PreStage(String),
    Spoiled(String),
}

/// What the etcd service reports when its pre stage fails, as Talos'
/// service runner words it.
fn service_message(why: &str) -> String {
    format!("Failed to run pre stage: {why}")
}

/// The emulated ring's store from a stand-in snapshot: its JSON, with
/// the hash at its end checked unless `skip_hash_check` (a body without
/// one is taken only then). Talos' bootstrap manifests are applied to it
/// again (created where missing).
fn emulated_store(snapshot: &[u8], skip_hash_check: bool) -> Result<ClusterStore, Failure> {
    let parse = |bytes: &[u8]| serde_json::from_slice::<ClusterStore>(bytes);
    let split = snapshot.len().checked_sub(HASH_LEN);
    let (mut store, hash) = match split.map(|at| (parse(&snapshot[..at]), at)) {
        Some((Ok(store), at)) => (store, Some(snapshot.split_at(at))),
        _ => match parse(snapshot) {
            Ok(store) => (store, None),
            Err(e) => {
                return Err(Failure::PreStage(format!(
                    "error verifying snapshot: not the snapshot of an emulated etcd (hct-sim \
                     restores an emulated ring only from the stand-in EtcdSnapshot gives): {e}"
                )));
            }
        },
    };
    if !skip_hash_check {
        check_hash(hash)?;
    }
    store.bootstrap_manifests_applied = false;
    Ok(store)
}

/// A real ring's snapshot, as far as it is checked before etcdutl runs:
/// bbolt's magic (`snapshot status` opens it as a database first), then
/// the hash as etcdutl's restore finds and checks it.
fn real_check(snapshot: &[u8], skip_hash_check: bool) -> Result<(), Failure> {
    let magic = snapshot
        .get(16..20)
        .map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    if magic != Some(BBOLT_MAGIC) {
        return Err(Failure::PreStage(
            "error verifying snapshot: invalid database".into(),
        ));
    }
    if skip_hash_check {
        return Ok(());
    }
    let hashed = snapshot.len() % SECTOR == HASH_LEN;
    check_hash(hashed.then(|| snapshot.split_at(snapshot.len() - HASH_LEN)))
}

/// etcdutl's check of a snapshot's body against the hash after it.
fn check_hash(parts: Option<(&[u8], &[u8])>) -> Result<(), Failure> {
    let Some((body, hash)) = parts else {
        return Err(Failure::Spoiled(
            "error recovering from the snapshot: snapshot missing hash but --skip-hash-check=false"
                .into(),
        ));
    };
    let actual = Sha256::digest(body);
    if actual.as_slice() == hash {
        return Ok(());
    }
    Err(Failure::Spoiled(format!(
        "error recovering from the snapshot: expected sha256 {}, got {}",
        go_bytes(hash),
        go_bytes(&actual)
    )))
}

/// Bytes as Go's `%v` prints a `[]byte`: `[1 2 3]`.
fn go_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod real_tests;
#[cfg(test)]
mod tests;
