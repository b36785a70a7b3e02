//! The etcd snapshot taken before a change puts a running control plane
//! at risk: a Talos or Kubernetes upgrade, any other new machine config,
//! a control plane leaving (scale-down) or a server resized. (A control
//! plane whose server is gone is recreated without one: nothing of it is
//! left to change.)
//! One rule, used by the plan (to refuse early) and by `converge` (which
//! takes the snapshot before it touches anything):
//!
//! - [`at_risk`]: which changes of the control plane are risky;
//! - `SnapshotRule` (in `group`, a group's spec): what the user chose (`etcd_backup`,
//!   `skip_pre_change_snapshot`), and with neither, a refusal that names
//!   both ways out;
//! - [`before_change`]: the snapshot (`etcd_snapshot`), or the skip, or
//!   the refusal.

use tracing::{info, warn};

use super::ClusterError;
use super::etcd_snapshot::{Source, take_and_keep};
use super::group::{Group, SnapshotRule};
use super::record::{IMPORTED, NodeRecord};
use crate::backup::Why;

/// A control plane as the change will leave it: `sha256` None while the
/// plan cannot know its config yet.
pub struct Planned<'a> {
    pub name: &'a str,
    pub sha256: Option<&'a str>,
}

/// Whether a change of the control plane is risky.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Risk {
    None,
    /// A config the plan cannot know yet may change.
    Maybe,
    /// What puts running control planes at risk.
    Risky(Vec<Change>),
}

/// One change that puts a running control plane at risk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The node leaves the control plane (a scale-down).
    Leaves(String),
    NewConfig(String),
    /// An imported node: its config unknown, applied again.
    Imported(String),
    Resize,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Leaves(node) => write!(f, "{node} leaves the control plane"),
            Change::NewConfig(node) => write!(f, "{node} gets a new machine config"),
            Change::Imported(node) => write!(
                f,
                "{node}'s machine config, unknown since the import, is applied again"
            ),
            Change::Resize => f.write_str("the servers change type (each is shut down)"),
        }
    }
}

/// The changes in words.
pub fn in_words(changes: &[Change]) -> Vec<String> {
    changes.iter().map(Change::to_string).collect()
}

/// The risky changes from `recorded` (the control planes as state knows
/// them) to `planned`; `resizing`: the servers change type. Only nodes
/// that ever ran a config count: a node never configured holds no etcd.
pub fn at_risk(recorded: &[NodeRecord], planned: &[Planned], resizing: bool) -> Risk {
    let running: Vec<&NodeRecord> = recorded.iter().filter(|n| !n.never_configured()).collect();
    if running.is_empty() {
        return Risk::None;
    }
    let mut reasons = Vec::new();
    let mut maybe = false;
    for node in &running {
        match planned.iter().find(|p| p.name == node.name) {
            None => reasons.push(Change::Leaves(node.name.clone())),
            Some(Planned { sha256: None, .. }) => maybe = true,
            Some(Planned {
                sha256: Some(sha), ..
            }) if node.config_sha256.as_deref() == Some(IMPORTED) => {
                reasons.push(Change::Imported(node.name.clone()));
            }
            Some(Planned {
                sha256: Some(sha), ..
            }) if node.config_sha256.as_deref() != Some(*sha) => {
                reasons.push(Change::NewConfig(node.name.clone()));
            }
            Some(_) => {}
        }
    }
    if resizing {
        reasons.push(Change::Resize);
    }
    match (reasons.is_empty(), maybe) {
        (false, _) => Risk::Risky(reasons),
        (true, true) => Risk::Maybe,
        (true, false) => Risk::None,
    }
}

/// The refusal of a risky change without a place for its snapshot.
pub fn refusal(reasons: &[String]) -> ClusterError {
    ClusterError::Refused {
        summary: "No place for the etcd snapshot before this change",
        detail: format!(
            "This apply changes running control planes ({}). hct takes an etcd snapshot \
             before such a change, and none is configured. Either set `etcd_backup = {{ \
             local_directory = \"<dir>\", age_recipients = [\"age1…\"] }}`: the snapshot is \
             written there, encrypted to those recipients; or set `skip_pre_change_snapshot = \
             true` to go on without one.",
            reasons.join("; ")
        ),
    }
}

/// Before a risky change of `group` (`reasons` from [`at_risk`]): the
/// snapshot, the skip, or the refusal, as its rule says. A snapshot taken
/// is kept in the group's `SnapshotLog` for state, also if the change then
/// fails.
pub async fn before_change(group: &Group<'_>, reasons: &[String]) -> Result<(), ClusterError> {
    let (destination, recipients) = match &group.spec.snapshots {
        SnapshotRule::NotNeeded => return Ok(()),
        SnapshotRule::Skip => {
            warn!(
                cluster = group.cluster(),
                "no etcd snapshot before this change (skip_pre_change_snapshot): {}",
                reasons.join("; ")
            );
            return Ok(());
        }
        SnapshotRule::Refuse => return Err(refusal(reasons)),
        SnapshotRule::Store {
            destination,
            recipients,
        } => (destination, recipients),
    };
    info!(
        cluster = group.cluster(),
        "taking an etcd snapshot before this change: {}",
        reasons.join("; ")
    );
    let source = Source {
        cluster: group.cluster(),
        secrets_fingerprint: group.settings.secrets_fingerprint(),
        kubernetes_version: group
            .settings
            .kubernetes_version
            .as_ref()
            .map(ToString::to_string),
        nodes: group
            .recorder
            .nodes()
            .into_iter()
            .filter(|n| !n.never_configured() && n.untrusted().is_none())
            .map(|n| (n.name, n.ip))
            .collect(),
        proxy: group.proxy,
        trust: group.trust,
        deadline: group.deadline,
    };
    let kept = take_and_keep(&source, destination, recipients, Why::PreChange, &|_| ()).await?;
    let _ = group.snapshots.taken.set(kept);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, sha: Option<&str>) -> NodeRecord {
        NodeRecord {
            name: name.to_string(),
            server_id: 1,
            ip: "10.0.1.2".parse().unwrap(),
            config_sha256: sha.map(str::to_string),
        }
    }

    #[test]
    fn only_changes_to_running_control_planes_are_risky() {
        let recorded = [record("c-cp-1", Some("a")), record("c-cp-2", None)];
        let same = |sha| Planned {
            name: "c-cp-1",
            sha256: sha,
        };
        // A node never configured, and new nodes, put nothing at risk.
        let grown = [
            same(Some("a")),
            Planned {
                name: "c-cp-3",
                sha256: None,
            },
        ];
        assert_eq!(at_risk(&recorded, &grown, false), Risk::None);
        assert_eq!(at_risk(&recorded, &[same(None)], false), Risk::Maybe);
        let Risk::Risky(changes) = at_risk(&recorded, &[same(Some("b"))], true) else {
            panic!("risky")
        };
        assert_eq!(
            in_words(&changes),
            [
                "c-cp-1 gets a new machine config",
                "the servers change type (each is shut down)"
            ]
        );
        assert_eq!(
            at_risk(&recorded, &[], false),
            Risk::Risky(vec![Change::Leaves("c-cp-1".into())])
        );
        assert_eq!(at_risk(&[record("c-cp-1", None)], &[], true), Risk::None);
    }

    #[test]
    fn the_refusal_names_both_ways_out() {
        let text = refusal(&["c-cp-1 gets a new machine config".into()]).to_string();
        assert!(
            text.contains("(c-cp-1 gets a new machine config)"),
            "{text}"
        );
        assert!(text.contains("etcd_backup = {"), "{text}");
        assert!(text.contains("skip_pre_change_snapshot = true"), "{text}");
    }
}
