//! Bootstrapping etcd exactly once in a cluster's life, decided from the
//! cluster itself.
//!
//! Talos refuses a Bootstrap only when the node's *own* etcd data
//! directory holds something. A control plane with empty data (a new one,
//! or one recreated behind the load balancer) takes the Bootstrap and starts
//! a second, empty etcd under the same CAs, whatever the others run. So
//! before any Bootstrap hct asks every control plane for etcd's members,
//! and sends it only when no control plane has an etcd and state does not
//! record that one was bootstrapped. A control plane that comes back
//! without data joins the running etcd like any other. When state records
//! a bootstrap but no control plane of before this run is left and none
//! has etcd, the cluster's etcd is gone: the apply stops and says so (the
//! new control planes wait, in state, for a restore), instead of starting
//! an empty cluster under the old name. With `restore_from`, those two
//! cases (an empty etcd to start, or a lost one) restore its snapshot
//! instead (`recover`); a running etcd is never restored over.

use futures_util::future::join_all;
use tracing::{info, warn};

use super::ClusterError;
use super::group::Group;
use super::record::NodeRecord;
use super::wait::{self, Retry};
use crate::backup::{BackupError, RestoreFrom, Restored, SnapshotFacts};
use crate::talos::api::{Bootstrapped, EtcdMembers, TalosClient, TalosError};

/// What state remembers of the cluster's etcd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdRecord {
    /// Bootstrap was sent once (or etcd was seen running): never again.
    Bootstrapped,
    /// No bootstrap in this cluster's life so far.
    NotYet,
}

/// What the control planes said of etcd.
enum Seen {
    /// `node` answered with etcd's members, or that an etcd without a
    /// leader answered: either way an etcd exists.
    Members { node: String },
    /// Every control plane answered that no etcd is reachable from it.
    Nothing,
}

/// Bootstraps etcd on the first of `nodes` if, and only if, the cluster
/// has never been bootstrapped. `may_survive`: some control plane of the
/// cluster existed before this run (what `Group::converge` returns), so
/// etcd's data may still be on a disk. Returns what state records from now
/// on.
pub(super) async fn once(
    group: &Group<'_>,
    nodes: &[NodeRecord],
    may_survive: bool,
    record: EtcdRecord,
) -> Result<EtcdRecord, ClusterError> {
    let Some(first) = nodes.first() else {
        return Ok(record);
    };
    match (seen(group, nodes).await?, record) {
        (Seen::Members { node }, _) => {
            info!(%node, "etcd exists; no bootstrap");
            Ok(EtcdRecord::Bootstrapped)
        }
        (Seen::Nothing, EtcdRecord::Bootstrapped) if !may_survive => {
            match &group.spec.restore_from {
                Some(from) => recover(group, first, from).await?,
                None => {
                    return Err(ClusterError::EtcdLost {
                        nodes: nodes.iter().map(|n| n.name.clone()).collect(),
                    });
                }
            }
            Ok(EtcdRecord::Bootstrapped)
        }
        (Seen::Nothing, EtcdRecord::Bootstrapped) => {
            // Nodes that kept their data bring etcd back as they start.
            info!("etcd was bootstrapped before; waiting for it, no bootstrap");
            Ok(EtcdRecord::Bootstrapped)
        }
        // A new cluster of old secrets may start from a snapshot, on new
        // servers only: adopted ones may hold etcd data that is not up yet.
        (Seen::Nothing, EtcdRecord::NotYet) => {
            match &group.spec.restore_from {
                Some(_) if may_survive => return Err(restore_refused(nodes)),
                Some(from) => recover(group, first, from).await?,
                None => {
                    send(group, first, None).await?;
                }
            }
            Ok(EtcdRecord::Bootstrapped)
        }
    }
}

fn restore_refused(nodes: &[NodeRecord]) -> ClusterError {
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    ClusterError::Refused {
        summary: "restore_from onto control planes of before this apply",
        detail: format!(
            "Control planes that existed before this apply ({}) may hold etcd data that is \
             not running yet; hct restores a snapshot only onto new ones, never over etcd \
             data. If their data is to go, delete their servers and apply again; otherwise \
             remove restore_from and let their etcd come back.",
            names.join(", ")
        ),
    }
}

/// Asks every control plane (which answers with the cluster's CA by now)
/// for etcd's members, until each has answered: with members, that an
/// etcd exists without quorum, or that no etcd is reachable from it. A
/// node that cannot be asked, or fails otherwise, is asked again: no
/// decision is made on a missing or unclear answer.
async fn seen(group: &Group<'_>, nodes: &[NodeRecord]) -> Result<Seen, ClusterError> {
    let first = &nodes[0];
    wait::until(
        group.deadline,
        &first.name,
        "asking the control planes for etcd",
        || async {
            let within = group.deadline.etcd_ask();
            let asked = join_all(nodes.iter().map(|node| async move {
                let address = group.address(node.ip);
                let answer = match TalosClient::connect(&address, group.trust).await {
                    Ok(mut client) => client.etcd_members(within).await,
                    Err(e) => Err(e),
                };
                (node.name.clone(), answer)
            }))
            .await;
            let mut unanswered = Vec::new();
            for (node, answer) in asked {
                match answer {
                    Ok(EtcdMembers::Listed(members)) if !members.is_empty() => {
                        return Ok(Seen::Members { node });
                    }
                    Ok(EtcdMembers::NoLeader(why)) => {
                        warn!(%node, "etcd answers without a leader ({why}); no bootstrap");
                        return Ok(Seen::Members { node });
                    }
                    Ok(EtcdMembers::NoneReachable(why)) => {
                        info!(%node, "no etcd reachable from this control plane ({why})");
                    }
                    // A running etcd lists at least its own member.
                    Ok(EtcdMembers::Listed(_)) => {
                        unanswered.push(format!("{node}: etcd listed no member"));
                    }
                    Err(e) => unanswered.push(format!("{node}: {e}")),
                }
            }
            if unanswered.is_empty() {
                Ok(Seen::Nothing)
            } else {
                Err(Retry::Again(unanswered.join("; ")))
            }
        },
    )
    .await
}

/// etcd restored on `node` from `from`, as Talos' disaster recovery does
/// it (`talosctl bootstrap --recover-from`): the snapshot, decrypted and
/// its hash checked first, is uploaded (`EtcdRecover`), and a Bootstrap
/// with `recover_etcd` starts a new etcd holding its data; the other
/// control planes join it like after any bootstrap.
async fn recover(
    group: &Group<'_>,
    node: &NodeRecord,
    from: &RestoreFrom,
) -> Result<(), ClusterError> {
    let ours = group.settings.secrets_fingerprint();
    let fetching = "fetching the snapshot to restore";
    let local = wait::until(group.deadline, &node.name, fetching, || async {
        wait::bucket_attempt(group.deadline, from.fetch(), ClusterError::Restore).await
    })
    .await?;
    match SnapshotFacts::read(&local.snapshot).map_err(ClusterError::Restore)? {
        Some(facts) => facts
            .check_cluster(&ours)
            .map_err(|why| ClusterError::Refused {
                summary: "restore_from: a snapshot of another cluster",
                detail: format!(
                    "{why}. Nothing was restored; set restore_from to a snapshot of this cluster."
                ),
            })?,
        None => warn!(
            snapshot = %from.location(),
            "no facts beside the snapshot (<snapshot>.json): hct cannot check that it is this cluster's"
        ),
    }
    // The whole file is read, decrypted and hashed: work for a thread of
    // its own, not one of the runtime's.
    let path = local.snapshot.clone();
    let Restored {
        snapshot,
        fingerprint,
    } = tokio::task::spawn_blocking(move || local.read())
        .await
        .unwrap_or_else(|stopped| match stopped.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(cancelled) => Err(BackupError::Unreadable {
                path,
                reason: format!("reading it stopped: {cancelled}"),
            }),
        })
        .map_err(ClusterError::Restore)?;
    info!(
        node = %node.name,
        snapshot = %from.location(),
        bytes = snapshot.len(),
        "restoring etcd from the snapshot"
    );
    match send(group, node, Some(&snapshot)).await? {
        Bootstrapped::Now => {
            let _ = group.snapshots.restored.set(fingerprint);
            Ok(())
        }
        // Talos refused: the node's etcd data is not empty. Nothing was
        // restored; its etcd is the one to keep.
        Bootstrapped::Already => Err(ClusterError::Refused {
            summary: "etcd data on the control plane to restore onto",
            detail: format!(
                "Talos answers that {} holds etcd data already: an earlier attempt of this \
                 apply restored it (its answer lost), or the node held data before; hct \
                 restores nothing over etcd data. Check the cluster's objects (kubectl), \
                 remove restore_from and apply: the cluster goes on with that etcd.",
                node.name
            ),
        }),
    }
}

/// Sends the Bootstrap (after the snapshot to recover from, if any);
/// already bootstrapped (the node's own data is not empty: a rerun after a
/// lost answer) is no failure here.
async fn send(
    group: &Group<'_>,
    node: &NodeRecord,
    snapshot: Option<&[u8]>,
) -> Result<Bootstrapped, ClusterError> {
    let address = group.address(node.ip);
    let step = match snapshot {
        Some(_) => "restoring etcd from the snapshot",
        None => "bootstrapping etcd",
    };
    let outcome = wait::until(group.deadline, &node.name, step, || {
        let address = address.clone();
        async move {
            let sent = match snapshot {
                Some(snapshot) => {
                    let mut client = TalosClient::connect_for_upload(&address, group.trust).await?;
                    // The upload, bounded by the operation's deadline.
                    let upload = client.etcd_recover(snapshot);
                    match tokio::time::timeout(group.deadline.left(), upload).await {
                        Ok(uploaded) => uploaded?,
                        Err(_) => return Err(Retry::Again("the upload timed out".to_string())),
                    }
                    client.bootstrap_recovering().await
                }
                None => {
                    TalosClient::connect(&address, group.trust)
                        .await?
                        .bootstrap()
                        .await
                }
            };
            match sent {
                Ok(outcome) => Ok(outcome),
                Err(e @ TalosError::NotControlPlane { .. }) => {
                    Err(Retry::Fatal(ClusterError::Talos(e)))
                }
                Err(e) => Err(e.into()),
            }
        }
    })
    .await?;
    match outcome {
        Bootstrapped::Now => info!(node = %node.name, "{step}: done"),
        Bootstrapped::Already => info!(node = %node.name, "{step}: etcd has data already"),
    }
    Ok(outcome)
}
