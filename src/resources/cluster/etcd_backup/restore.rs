//! `restore_from` and `restored_snapshot_sha256`: the snapshot etcd starts
//! from, typed (a path, or `s3://<bucket>/<key>` in `etcd_backup`'s
//! bucket), and checked at plan: it must open with the identity, be this
//! cluster's, and no control plane may be left.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::{ATTRIBUTE, BUCKET, RESTORE, RESTORED};
use crate::backup::{Bucket, RestoreFrom, SnapshotAt, SnapshotFacts};
use crate::cluster::settings::secrets_fingerprint;
use crate::resources::cluster::NODES;
use crate::resources::node_group::nodes_from;
use crate::resources::values::set;
use crate::talos::Secrets;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

/// `restore_from`, for the apply: none when state records its snapshot
/// restored already (or restores none: planned known).
pub fn for_apply(state: &Value) -> Result<Option<RestoreFrom>, Diagnostic> {
    if !state.get(RESTORED).is_unknown() {
        return Ok(None);
    }
    typed(state)
}

fn snapshot_path() -> AttrPath {
    AttrPath::attr(RESTORE).attr_of("snapshot")
}

/// `restore_from`, typed: an `s3://` snapshot must be in `etcd_backup`'s
/// bucket, whose keys reach it.
pub fn typed(value: &Value) -> Result<Option<RestoreFrom>, Diagnostic> {
    let restore = value.get(RESTORE);
    let (Some(snapshot), Some(identity)) = (
        restore.get("snapshot").as_str(),
        restore.get("age_identity_file").as_str(),
    ) else {
        return Ok(None);
    };
    let snapshot = match snapshot.strip_prefix("s3://") {
        None => SnapshotAt::File(PathBuf::from(snapshot)),
        Some(rest) => {
            let (name, key) = rest
                .split_once('/')
                .filter(|(name, key)| !name.is_empty() && !key.is_empty())
                .ok_or_else(|| {
                    Diagnostic::error(
                        "Invalid restore_from.snapshot",
                        format!(
                            "{snapshot:?} names no object; expected s3://<bucket>/<key>, as \
                             pre_change_snapshot or the hct_etcd_snapshots data source give it."
                        ),
                    )
                    .at(snapshot_path())
                })?;
            let config = super::bucket_config(value)?
                .filter(|config| config.name == name)
                .ok_or_else(|| {
                    Diagnostic::error(
                        "restore_from: a bucket hct has no keys for",
                        format!(
                            "The snapshot is in bucket {name:?}, and etcd_backup.bucket names \
                             {}. Set etcd_backup.bucket to that bucket (with keys that may read \
                             it), or download the snapshot and its .json and name the file.",
                            match value.get(ATTRIBUTE).get(BUCKET).get("name").as_str() {
                                Some(other) => format!("{other:?}"),
                                None => "none".to_string(),
                            }
                        ),
                    )
                    .at(snapshot_path())
                })?;
            let bucket = Bucket::open(&config).map_err(|e| {
                Diagnostic::error("Cannot use the snapshot's bucket", format!("{e}."))
                    .at(snapshot_path())
            })?;
            SnapshotAt::Bucket {
                bucket,
                key: key.to_string(),
            }
        }
    };
    Ok(Some(RestoreFrom {
        snapshot,
        identity_file: PathBuf::from(identity),
    }))
}

/// A new `restore_from`: the snapshot must open with the identity (one in
/// the bucket is fetched for it), and no control plane of the cluster may
/// be left (a restore is for a cluster whose etcd is gone, never over a
/// running one).
pub async fn plan(
    prior: &Value,
    planned: &mut Value,
    cancel: &CancellationToken,
    diagnostics: &mut Diagnostics,
) {
    let restored = if prior.is_null() {
        Value::Null
    } else {
        prior.get(RESTORED).clone()
    };
    set(planned, RESTORED, restored.clone());
    let unchanged = !prior.is_null() && prior.get(RESTORE) == planned.get(RESTORE);
    // Restored once already, from the same location: not fetched again
    // (a snapshot is known by where it is once restored), whatever became
    // of its bucket.
    if unchanged && !restored.is_null() {
        return;
    }
    let from = match typed(planned) {
        Ok(Some(from)) => from,
        Ok(None) => return,
        Err(d) => {
            diagnostics.push(d);
            return;
        }
    };
    let local = match cancel.run_until_cancelled(from.fetch()).await {
        None => {
            diagnostics.push(super::stopped());
            return;
        }
        Some(Ok(local)) => local,
        Some(Err(e)) => {
            set(planned, RESTORED, Value::Unknown);
            if !unchanged {
                diagnostics.push(
                    Diagnostic::error("Cannot fetch the snapshot to restore", format!("{e}."))
                        .at(snapshot_path()),
                );
            }
            return;
        }
    };
    // A snapshot may be restored at apply unless it was before.
    let fingerprint = local.fingerprint().ok();
    if fingerprint.is_none() || fingerprint.as_deref() != restored.as_str() {
        set(planned, RESTORED, Value::Unknown);
    }
    if unchanged {
        return;
    }
    if let Err(e) = local.check_readable() {
        diagnostics.push(
            Diagnostic::error("Cannot open the snapshot to restore", format!("{e}."))
                .at(snapshot_path()),
        );
    }
    // Whose it is, when the secrets are known here (else the apply checks).
    if let Ok(Some(facts)) = SnapshotFacts::read(&local.snapshot)
        && let Some(text) = planned.get("machine_secrets").as_str()
        && let Ok(secrets) = Secrets::from_yaml(text)
        && let Err(why) = facts.check_cluster(&secrets_fingerprint(&secrets))
    {
        diagnostics.push(
            Diagnostic::error(
                "restore_from: a snapshot of another cluster",
                format!("{why}. Set restore_from to a snapshot of this cluster."),
            )
            .at(snapshot_path()),
        );
    }
    let left: Vec<String> = nodes_from(prior.get(NODES))
        .into_iter()
        .map(|n| n.name)
        .collect();
    if !left.is_empty() {
        diagnostics.push(
            Diagnostic::error(
                "restore_from on a cluster whose control planes exist",
                format!(
                    "These control planes exist: {}. A restore starts etcd anew from the \
                     snapshot, and hct does it only where no control plane is left (the \
                     cluster's etcd is lost) or on a new cluster, never over a running etcd. \
                     Remove restore_from; to roll the cluster back to the snapshot, delete every \
                     control-plane server first (`hcloud server delete …`), then apply with it.",
                    left.join(", ")
                ),
            )
            .at(AttrPath::attr(RESTORE)),
        );
    }
}
