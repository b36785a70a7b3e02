//! Talos' `EtcdSnapshot`: a snapshot of the node's local etcd, as etcd's
//! `Maintenance.Snapshot` (clientv3) gives it and Talos streams it on: the
//! database followed by the 32-byte SHA-256 of it, so that a client can
//! check that it arrived whole.
//!
//! Only control planes take it (a worker answers Unimplemented, as Talos'
//! `checkControlplane` does), and only while their etcd runs (Running and
//! healthy, as ServiceList reports it; otherwise Unavailable: Talos' etcd
//! client finds nothing to read from). Where the snapshot comes from:
//!
//! - a ring (etcd cluster) with a real control plane
//!   (`kube_control_plane`): the node's own member of its real etcd, over
//!   etcd's JSON gateway (`gateway`), waiting for a ring that is starting
//!   and for the member to be listed started; the hash is checked
//!   (Internal if it does not match). A bbolt database, as on Talos.
//! - an emulated ring has no etcd database to give, so it gets a stand-in,
//!   for emulated rings only: the JSON of the ring's emulated Kubernetes
//!   store (`crate::kube::store::ClusterStore`, brought up to date first,
//!   as its API server does before answering) followed by the SHA-256 of
//!   that JSON. The same shape, so a client checks its integrity the same
//!   way, but nothing `etcdutl snapshot restore` would take.
//!
//! `source` decides under the world's lock; `take` then fetches a real
//! snapshot without it.

pub mod gateway;

use sha2::{Digest, Sha256};
use tonic::Code;

use self::gateway::GatewayError;
use super::calls::{self, CallError, NodeRef};
use super::etcd::etcd_ready;
use super::kube_api::store::{self, store_id};
use super::kube_control_plane::Registry;
use super::kube_control_plane::etcd_member::member_name;
use super::kube_control_plane::spec::store_of;
use super::lifecycle;
use crate::clock::Timestamp;
use crate::state::World;

/// Bytes of the SHA-256 etcd appends to the database.
pub const HASH_LEN: usize = 32;

/// Where a node's snapshot comes from, as the world says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The node's member of the ring's real etcd: the ring's store id in
    /// the registry and the member's name (`etcd_member::member_name`).
    Real { store: String, member: String },
    /// The emulated ring's stand-in, whole (body and hash).
    Emulated(Vec<u8>),
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("failed reading etcd snapshot: {0}")]
    EtcdDown(String),
    #[error("failed reading etcd snapshot: the real etcd of {0} does not serve")]
    RealDown(String),
    #[error("failed reading etcd snapshot: the node's etcd member {0} is not started")]
    MemberDown(String),
    #[error("failed reading etcd snapshot: {0}")]
    Gateway(#[from] GatewayError),
    #[error(
        "etcd snapshot integrity check failed: its last {HASH_LEN} bytes are not the SHA-256 of the rest ({0} bytes in all)"
    )]
    BadHash(usize),
    #[error("cannot encode the emulated store: {0}")]
    Encode(#[from] serde_json::Error),
}

impl SnapshotError {
    pub fn code(&self) -> Code {
        match self {
            Self::Call(e) => e.code(),
            Self::EtcdDown(_) | Self::RealDown(_) | Self::MemberDown(_) => Code::Unavailable,
            Self::Gateway(e) => e.code(),
            Self::BadHash(_) | Self::Encode(_) => Code::Internal,
        }
    }
}

/// Where the snapshot of node `at`'s etcd comes from, at `now`; `release`
/// is that of the real components hct-sim runs (`KubeBinaries::version`),
/// if any.
pub fn source(
    world: &mut World,
    at: NodeRef,
    release: Option<&str>,
    now: Timestamp,
) -> Result<Source, SnapshotError> {
    let (server, talos) = calls::node(world, at)?;
    let config = calls::configured(talos, "EtcdSnapshot")?;
    if !config.is_control_plane() {
        return Err(CallError::ControlPlaneOnly("etcd snapshot").into());
    }
    etcd_ready(world, server, &talos.node, &config).map_err(SnapshotError::EtcdDown)?;
    let member = talos
        .node
        .disk
        .etcd
        .member
        .as_ref()
        .ok_or(CallError::EtcdNotRunning)?;
    let ring = member.ring;
    if let Some(store) = release.and_then(|r| store_of(server, r)) {
        return Ok(Source::Real {
            store,
            member: member_name(&member.hostname, member.id),
        });
    }
    let running = lifecycle::running_version(talos);
    if let Some(running) = running {
        store::sync(world, now, &config, &running, ring);
    }
    let store = world
        .kube
        .cluster(&store_id(&config.cluster, ring), now.unix_seconds());
    Ok(Source::Emulated(sealed(serde_json::to_vec(store)?)))
}

/// The snapshot from `source`: an emulated one as it is, a real one
/// fetched from the node's own member of the ring's real etcd and checked.
pub async fn take(registry: &Registry, source: Source) -> Result<Vec<u8>, SnapshotError> {
    match source {
        Source::Emulated(bytes) => Ok(bytes),
        Source::Real { store, member } => {
            registry
                .endpoints(&store)
                .await
                .ok_or(SnapshotError::RealDown(store.clone()))?;
            let etcd = registry
                .etcd_member(&store, &member)
                .await
                .ok_or(SnapshotError::MemberDown(member))?;
            verified(gateway::snapshot(etcd).await?)
        }
    }
}

/// `body` followed by its SHA-256, as etcd ends a snapshot.
pub fn sealed(mut body: Vec<u8>) -> Vec<u8> {
    let hash = Sha256::digest(&body);
    body.extend_from_slice(&hash);
    body
}

/// The snapshot, if its last bytes are the SHA-256 of the rest.
pub fn verified(snapshot: Vec<u8>) -> Result<Vec<u8>, SnapshotError> {
    let whole = snapshot.len() >= HASH_LEN && {
        let (body, hash) = snapshot.split_at(snapshot.len() - HASH_LEN);
        Sha256::digest(body).as_slice() == hash
    };
    if whole {
        Ok(snapshot)
    } else {
        Err(SnapshotError::BadHash(snapshot.len()))
    }
}

#[cfg(test)]
mod tests;
