//! `etcd_backup`, `skip_pre_change_snapshot` and `pre_change_snapshot`:
//! where the etcd snapshot before a risky change goes (the rule itself is
//! the runbook's, `cluster::pre_change`). Here: the attributes, their
//! checks, the typed rule, and the plan: a risky change with nowhere to
//! put its snapshot is refused before anything is touched, and the
//! snapshot's path is planned unknown whenever the apply may take one.
//! `restore_from` too: the snapshot etcd starts from, checked at plan.

use tokio_util::sync::CancellationToken;

use super::NODES;
use crate::backup::{BucketConfig, Why};
use crate::cluster::NodeRecord;
use crate::cluster::group::{SnapshotLog, SnapshotRule};
use crate::cluster::pre_change::{self, Planned, Risk};
use crate::resources::node_group::nodes_from;
use crate::resources::s3_bucket::{self, Keys};
use crate::resources::snapshot_destination;
use crate::resources::values::set;
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Mode, Nesting, Type, Value};

pub use crate::resources::snapshot_destination::ATTRIBUTE;
pub const SKIP: &str = "skip_pre_change_snapshot";
pub const TAKEN: &str = "pre_change_snapshot";
pub const RESTORE: &str = "restore_from";
pub const RESTORED: &str = "restored_snapshot_sha256";
const BUCKET: &str = s3_bucket::ATTRIBUTE;

pub fn attributes() -> Vec<Attribute> {
    vec![
        snapshot_destination::attribute(Mode::Optional, Keys::WriteOnly, Why::PreChange),
        Attribute::optional(SKIP, Type::Bool).description(
            "`true`: make risky changes of the control plane without an etcd snapshot first \
             (logged as a warning). Default false.",
        ),
        Attribute::computed(TAKEN, Type::String).description(
            "Where the last etcd snapshot taken before a change is: its path as written, or \
             `s3://<bucket>/<key>`; planned unknown when the apply may take one.",
        ),
        Attribute::nested(
            RESTORE,
            Mode::Optional,
            Nesting::Single,
            vec![
                Attribute::required("snapshot", Type::String).description(
                    "A snapshot hct wrote (`<cluster>-<time>-pre-change.etcd.age`): a path, \
                     relative to the directory Terraform runs in, or `s3://<bucket>/<key>` in \
                     the bucket of `etcd_backup.bucket` (as `pre_change_snapshot` and \
                     `hct_etcd_snapshots` give it; its keys must read it).",
                ),
                Attribute::required("age_identity_file", Type::String).description(
                    "A file with the age identity of one of the snapshot's recipients \
                     (`age-keygen`'s output). Only its path is in plan and state.",
                ),
            ],
        )
        .description(
            "Start etcd from a snapshot instead of empty: used only where hct would otherwise \
             bootstrap an empty etcd (a new cluster, e.g. with the old `machine_secrets`) or \
             stop because the cluster's etcd is lost (every control-plane server gone). The \
             snapshot is decrypted and etcd's hash checked, uploaded to the first control plane \
             and bootstrapped from, as `talosctl bootstrap --recover-from` does; the others \
             join it. Set on a cluster whose control planes exist, it is refused at plan. A \
             snapshot restored once (`restored_snapshot_sha256`) is never restored again: remove \
             `restore_from` once the cluster is back. See docs/guides/backup-and-restore.md.",
        ),
        Attribute::computed(RESTORED, Type::String).description(
            "`sha256:<hex>` of the encrypted snapshot etcd was last restored from \
             (`restore_from`); planned unknown when the apply may restore one.",
        ),
    ]
}

/// `etcd_backup` (`snapshot_destination::validate`) and the skip beside it.
pub fn validate(config: &Value) -> Diagnostics {
    let mut found = snapshot_destination::validate(config);
    if !config.get(ATTRIBUTE).is_null() && config.get(SKIP).as_bool() == Some(true) {
        found.push(
            Diagnostic::error(
                "etcd_backup and skip_pre_change_snapshot both set",
                "Keep one: etcd_backup to take a snapshot before risky changes, or \
                 skip_pre_change_snapshot = true to make them without one.",
            )
            .at(AttrPath::attr(SKIP)),
        );
    }
    found
}

/// `etcd_backup.bucket`, typed (the prefix defaults to the cluster's name).
pub fn bucket_config(value: &Value) -> Result<Option<BucketConfig>, Diagnostic> {
    snapshot_destination::bucket_config(value, value.get("name").as_str().unwrap_or_default())
}

/// The typed rule for the control plane's apply.
pub fn rule(value: &Value) -> Result<SnapshotRule, Diagnostic> {
    if value.get(ATTRIBUTE).is_null() {
        return Ok(if value.get(SKIP).as_bool() == Some(true) {
            SnapshotRule::Skip
        } else {
            SnapshotRule::Refuse
        });
    }
    let cluster = value.get("name").as_str().unwrap_or_default();
    let (destination, recipients) = snapshot_destination::destination(value, cluster)?;
    Ok(SnapshotRule::Store {
        destination,
        recipients,
    })
}

/// What the plan says of a change of a cluster that exists: refused when
/// risky with nowhere for its snapshot, and `pre_change_snapshot` unknown
/// when the apply may take one.
/// `cancel`: Terraform's stop, for the bucket's calls.
pub async fn plan(
    prior: &Value,
    planned: &mut Value,
    cancel: &CancellationToken,
    diagnostics: &mut Diagnostics,
) {
    restore::plan(prior, planned, cancel, diagnostics).await;
    let kept = if prior.is_null() {
        Value::Null
    } else {
        prior.get(TAKEN).clone()
    };
    set(planned, TAKEN, kept);
    if prior.is_null() {
        return;
    }
    let recorded: Vec<NodeRecord> = nodes_from(prior.get(NODES));
    // Unknown nodes (the network plan is known only at apply): the same
    // nodes, their configs unknown.
    let planned_nodes: Vec<(String, Option<String>)> = match planned.get(NODES).as_list() {
        Some(list) => list
            .iter()
            .filter_map(|n| {
                Some((
                    n.get("name").as_str()?.to_string(),
                    n.get("config_sha256").as_str().map(str::to_string),
                ))
            })
            .collect(),
        None => recorded.iter().map(|n| (n.name.clone(), None)).collect(),
    };
    let as_planned: Vec<Planned> = planned_nodes
        .iter()
        .map(|(name, sha)| Planned {
            name,
            sha256: sha.as_deref(),
        })
        .collect();
    let server_type = |v: &Value| v.get("control_plane").get("server_type").clone();
    let resizing = server_type(prior) != server_type(planned);
    let risk = pre_change::at_risk(&recorded, &as_planned, resizing);
    match (rule(planned), risk) {
        (_, Risk::None) | (Ok(SnapshotRule::Skip | SnapshotRule::NotNeeded), _) => {}
        (Ok(SnapshotRule::Refuse), risk) => {
            // Configs known only at apply (in the parallel form, any change
            // of hct_cluster_secrets) nearly always change: refused now
            // rather than after the pools' and images' changes are made.
            let mut reasons = match risk {
                Risk::Risky(changes) => pre_change::in_words(&changes),
                _ => vec![
                    "their machine configs may change, and are known only at apply".to_string(),
                ],
            };
            reasons.extend(upgrades(prior, planned));
            diagnostics.push(
                pre_change::refusal(&reasons)
                    .to_diagnostic()
                    .at(AttrPath::attr(ATTRIBUTE)),
            );
        }
        (Ok(SnapshotRule::Store { destination, .. }), _) => {
            set(planned, TAKEN, Value::Unknown);
            // Keys the bucket refuses fail the plan, not the apply; a
            // server that does not answer now is tried again at apply.
            match cancel.run_until_cancelled(destination.check()).await {
                None => diagnostics.push(stopped()),
                Some(Ok(())) => {}
                Some(Err(e)) if e.is_transient() => diagnostics.push(
                    Diagnostic::warning(
                        "The etcd snapshots' bucket did not answer",
                        format!(
                            "This change needs an etcd snapshot first, and the bucket could not \
                             be checked now: {e}. The apply tries again before it changes \
                             anything."
                        ),
                    )
                    .at(AttrPath::attr(ATTRIBUTE).attr_of(BUCKET)),
                ),
                Some(Err(e)) => diagnostics.push(
                    Diagnostic::error(
                        "Cannot use the etcd snapshots' bucket",
                        format!(
                            "This change needs an etcd snapshot first, and the bucket refuses \
                             hct: {e}. Check etcd_backup.bucket (its name, endpoint and keys)."
                        ),
                    )
                    .at(AttrPath::attr(ATTRIBUTE).attr_of(BUCKET)),
                ),
            }
        }
        (Err(_), _) => set(planned, TAKEN, Value::Unknown),
    }
}

/// What state names after an apply: the snapshot it took and the one it
/// restored from, else those named before. A snapshot the plan did not
/// foresee (its path planned as known: e.g. a server resized outside
/// Terraform since the plan) is named in a warning instead, as Terraform
/// takes no other value than the planned one.
pub fn record(prior: &Value, state: &mut Value, log: &SnapshotLog, found: &mut Diagnostics) {
    let before = |name: &str| {
        if prior.is_null() {
            Value::Null
        } else {
            prior.get(name).clone()
        }
    };
    let taken = log.taken.get().map(|kept| Value::from(kept.as_str()));
    let path = match (taken, state.get(TAKEN).is_unknown()) {
        (Some(path), true) => path,
        (Some(path), false) => {
            found.push(Diagnostic::warning(
                "An etcd snapshot the plan did not foresee",
                format!(
                    "The apply took an etcd snapshot before a change the plan did not show: \
                     {}. pre_change_snapshot names it from the next apply that takes one.",
                    path.as_str().unwrap_or_default()
                ),
            ));
            before(TAKEN)
        }
        (None, _) => before(TAKEN),
    };
    set(state, TAKEN, path);
    let restored = match log.restored.get() {
        Some(fingerprint) => Value::from(fingerprint.as_str()),
        None => before(RESTORED),
    };
    set(state, RESTORED, restored);
}

/// The plan's bucket call, stopped by Terraform.
fn stopped() -> Diagnostic {
    Diagnostic::error(
        "Stopped",
        "Terraform stopped the provider while the plan talked to the etcd snapshots' bucket.",
    )
}

/// The releases that change, in words, for the refusal.
fn upgrades(prior: &Value, planned: &Value) -> Vec<String> {
    [
        ("talos_version", "Talos"),
        ("kubernetes_version", "Kubernetes"),
    ]
    .into_iter()
    .filter_map(|(name, what)| {
        let (from, to) = (prior.get(name).as_str()?, planned.get(name).as_str()?);
        (from != to).then(|| format!("a {what} upgrade from {from} to {to}"))
    })
    .collect()
}

mod restore;

pub use restore::for_apply as restore_for_apply;
#[cfg(test)]
mod tests;
