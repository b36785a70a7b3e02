//! An etcd snapshot taken over the Talos API and kept: from the first
//! control plane whose etcd answers (with the cluster's CA only), checked
//! against etcd's hash, age-encrypted and written where `etcd_backup` says
//! (a directory or a bucket: `backup::Destination`), its facts beside it.
//! Taken before a risky change (`pre_change`) and on demand (the
//! `hct_etcd_snapshot` action: [`on_demand`]).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tracing::info;

use super::ClusterError;
use super::wait::{self, Deadline, Retry};
use crate::backup::{
    self, BackupError, Destination, Recipients, SnapshotFacts, SnapshotFile, Stored, Why,
};
use crate::net::Proxy;
use crate::talos::api::{NodeAddress, TalosClient, TalosError, Trust};

/// Where a snapshot comes from, and what its facts say of the cluster.
pub struct Source<'a> {
    pub cluster: &'a str,
    pub secrets_fingerprint: String,
    pub kubernetes_version: Option<String>,
    /// The control planes to ask, in this order: name and IP.
    pub nodes: Vec<(String, Ipv4Addr)>,
    /// SOCKS5 proxy into the private network, if hct runs outside it.
    pub proxy: Option<Proxy>,
    pub trust: &'a Trust,
    pub deadline: &'a Deadline,
}

/// A snapshot taken when a person asks for one (`<cluster>-<time>-on-demand.etcd.age`);
/// `progress` hears each step. Where it was kept.
pub async fn on_demand(
    source: &Source<'_>,
    destination: &Destination,
    recipients: &Recipients,
    progress: &(dyn Fn(String) + Sync),
) -> Result<String, ClusterError> {
    take_and_keep(source, destination, recipients, Why::OnDemand, progress).await
}

/// Takes the snapshot (named for `why`) and keeps it; where it was kept:
/// its path as written, or `s3://<bucket>/<key>`.
pub async fn take_and_keep(
    source: &Source<'_>,
    destination: &Destination,
    recipients: &Recipients,
    why: Why,
    progress: &(dyn Fn(String) + Sync),
) -> Result<String, ClusterError> {
    let deadline = source.deadline;
    let bucket = "the etcd snapshots' bucket";
    wait::until(deadline, bucket, "checking its keys", || async {
        wait::bucket_attempt(deadline, destination.check(), ClusterError::Backup).await
    })
    .await?;
    let staging = destination.stage().map_err(ClusterError::Backup)?;
    let directory = staging.dir();
    let taken_at = time::OffsetDateTime::now_utc();
    let name = backup::snapshot_name(source.cluster, taken_at, why);
    let (stored, stored_from, release) =
        wait::until(deadline, "etcd", "taking the etcd snapshot", || {
            let name = &name;
            async move {
                let mut last = Retry::Again("no control plane to take it from".to_string());
                // A node that answers with another CA is not asked (nothing
                // is sent to it), and the others are: that ends the wait only
                // when no other node may still answer.
                let (mut foreign, mut others) = (None, false);
                for (node, ip) in &source.nodes {
                    progress(format!("taking an etcd snapshot from {node}"));
                    // Within the operation's deadline; a stalled stream moves
                    // on to the next control plane (`snapshot_of`).
                    let taking = snapshot_of(source, node, *ip, directory, name, recipients);
                    let Ok(result) = tokio::time::timeout(deadline.left(), taking).await else {
                        return Err(Retry::Again(format!("{node}: the snapshot timed out")));
                    };
                    match result {
                        Ok((stored, release)) => return Ok((stored, node.clone(), release)),
                        Err(Snapshot::Stalled) => {
                            info!(node = %node, "the etcd snapshot stalled; trying the next control plane");
                            last = Retry::Again(format!("{node}: the snapshot stalled"));
                            others = true;
                        }
                        Err(Snapshot::Talos(e @ TalosError::WrongCa { .. })) => {
                            info!(node = %node, "not asked for an etcd snapshot: {e}");
                            progress(format!("{node} answers with another CA: not asked"));
                            foreign = Some(e);
                        }
                        Err(Snapshot::Talos(e)) => {
                            others = true;
                            info!(node = %node, "no etcd snapshot from this node: {e}");
                            last = Retry::from(e);
                            if matches!(last, Retry::Fatal(_)) {
                                return Err(last);
                            }
                        }
                        Err(Snapshot::Backup(BackupError::Damaged(why))) => {
                            info!(node = %node, "the etcd snapshot from this node is damaged: {why}");
                            last = Retry::Again(format!("{node}: snapshot damaged: {why}"));
                            others = true;
                        }
                        Err(Snapshot::Backup(e)) => {
                            return Err(Retry::Fatal(ClusterError::Backup(e)));
                        }
                    }
                }
                match foreign {
                    Some(e) if !others => Err(Retry::from(e)),
                    _ => Err(last),
                }
            }
        })
        .await?;
    progress(format!(
        "{} bytes of etcd from {stored_from}, checked and encrypted",
        stored.bytes
    ));
    let facts = SnapshotFacts {
        cluster: source.cluster.to_string(),
        secrets: source.secrets_fingerprint.clone(),
        taken_at: backup::utc(taken_at),
        node: stored_from,
        bytes: stored.bytes,
        talos_version: release,
        kubernetes_version: source.kubernetes_version.clone(),
    };
    let kept = wait::until(deadline, bucket, "keeping the etcd snapshot", || async {
        let keeping = destination.keep(&stored, &facts);
        wait::bucket_attempt(deadline, keeping, ClusterError::Backup).await
    })
    .await?;
    info!(
        cluster = source.cluster,
        node = %facts.node,
        at = %kept,
        bytes = stored.bytes,
        "etcd snapshot kept"
    );
    progress(format!("etcd snapshot kept at {kept}"));
    Ok(kept)
}

enum Snapshot {
    Talos(TalosError),
    Backup(BackupError),
    /// No bytes for [`STALL`].
    Stalled,
}

/// How long a snapshot stream may send nothing before hct gives up on it.
const STALL: Duration = Duration::from_secs(30);
/// How often a snapshot on its way logs how far it got.
const PROGRESS: Duration = Duration::from_secs(10);

/// One node's snapshot, streamed into its file, logging its progress; and
/// the Talos release the node runs (before an upgrade: the old one).
async fn snapshot_of(
    source: &Source<'_>,
    node: &str,
    ip: Ipv4Addr,
    directory: &std::path::Path,
    name: &str,
    recipients: &Recipients,
) -> Result<(Stored, String), Snapshot> {
    let address = NodeAddress::new(ip.into(), source.proxy);
    let mut client = TalosClient::connect(&address, source.trust)
        .await
        .map_err(Snapshot::Talos)?;
    let release = client.version().await.map_err(Snapshot::Talos)?.tag;
    let mut stream = client.etcd_snapshot().await.map_err(Snapshot::Talos)?;
    let mut file = SnapshotFile::create(directory, name, recipients).map_err(Snapshot::Backup)?;
    let (mut received, mut logged) = (0usize, Instant::now());
    loop {
        let next = tokio::time::timeout(STALL, stream.next()).await;
        let Some(chunk) = next
            .map_err(|_| Snapshot::Stalled)?
            .map_err(Snapshot::Talos)?
        else {
            break;
        };
        received += chunk.len();
        file.write(&chunk).map_err(Snapshot::Backup)?;
        if logged.elapsed() >= PROGRESS {
            info!(node = %node, bytes = received, "etcd snapshot on its way");
            logged = Instant::now();
        }
    }
    let stored = file.finish().map_err(Snapshot::Backup)?;
    Ok((stored, release))
}
