//! Control planes whose servers are gone (deleted outside Terraform, or
//! lost), as the plan shows them. Each is recreated at its IP under its
//! name; etcd still lists it as a member, and as the new node joins, Talos'
//! etcd service removes the old member of the same hostname before adding
//! itself, so etcd ends with as many members as before. That needs a
//! working etcd: while at least a quorum of the members etcd lists run, the
//! plan warns and says what apply does; with more gone than etcd can
//! lose, it is refused with the numbers (etcd must be recovered first).

use crate::cluster::NodeRecord;
use crate::cluster::slots::NodeSlot;
use crate::tf::{AttrPath, Diagnostic};

/// Members etcd needs running out of `members`.
pub fn quorum(members: u32) -> u32 {
    members / 2 + 1
}

/// What the plan says of the control planes gone from state: `slots` are
/// the plan's, `recorded` the nodes state holds after refresh, `members`
/// how many control planes the cluster had (the prior plan's count).
pub fn check(
    slots: &[NodeSlot],
    recorded: &[NodeRecord],
    members: u32,
    at: &AttrPath,
) -> Option<Diagnostic> {
    if recorded.is_empty() {
        return None; // a new cluster, or one being made again
    }
    let gone: Vec<&NodeSlot> = slots
        .iter()
        .filter(|s| s.index <= members && !recorded.iter().any(|n| n.name == s.name))
        .collect();
    if gone.is_empty() {
        return None;
    }
    let names: Vec<String> = gone
        .iter()
        .map(|s| format!("{} ({})", s.name, s.ip))
        .collect();
    let lost = u32::try_from(gone.len()).unwrap_or(u32::MAX);
    let running = members.saturating_sub(lost);
    let needed = quorum(members);
    if running < needed {
        return Some(
            Diagnostic::error(
                "etcd has lost its quorum",
                format!(
                    "{lost} of the cluster's {members} control planes are gone ({}). etcd still \
                     lists all {members} as members and needs {needed} of them running, but at \
                     most {running} run, so no new control plane can join. Recover etcd first: \
                     take a snapshot on a surviving control plane (`talosctl etcd snapshot`), \
                     reset the survivors and bootstrap one of them with `talosctl bootstrap \
                     --recover-from`, then apply again.",
                    names.join(", ")
                ),
            )
            .at(at.clone()),
        );
    }
    Some(
        Diagnostic::warning(
            format!(
                "Control plane{} gone: {}",
                if lost == 1 { "" } else { "s" },
                names.join(", ")
            ),
            format!(
                "The server{} no longer exist{}. Apply creates {} again at the same IP and \
                 name, one control plane at a time; etcd still lists {} as member{} ({running} of \
                 {members} run, {needed} are needed), and Talos removes the old member as the \
                 new node joins, so etcd ends with {members} members.",
                if lost == 1 { "" } else { "s" },
                if lost == 1 { "s" } else { "" },
                if lost == 1 { "it" } else { "them" },
                if lost == 1 { "it" } else { "them" },
                if lost == 1 { "" } else { "s" },
            ),
        )
        .at(at.clone()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tf::Severity;

    fn slots(n: u32) -> Vec<NodeSlot> {
        (1..=n)
            .map(|index| NodeSlot {
                name: format!("c-cp-{index}"),
                ip: format!("10.0.128.{}", 16 + index).parse().unwrap(),
                index,
                placement_group: 1,
            })
            .collect()
    }

    fn recorded(indexes: &[u32]) -> Vec<NodeRecord> {
        indexes
            .iter()
            .map(|i| NodeRecord {
                name: format!("c-cp-{i}"),
                server_id: i64::from(*i),
                ip: format!("10.0.128.{}", 16 + i).parse().unwrap(),
                config_sha256: None,
            })
            .collect()
    }

    #[test]
    fn one_gone_of_three_is_recreated_two_are_refused() {
        let at = AttrPath::attr("control_plane");
        let one = check(&slots(3), &recorded(&[2, 3]), 3, &at).unwrap();
        assert_eq!(one.severity, Severity::Warning);
        assert!(one.summary.contains("c-cp-1 (10.0.128.17)"), "{one:?}");
        assert!(one.detail.contains("2 of 3 run, 2 are needed"), "{one:?}");
        let two = check(&slots(3), &recorded(&[3]), 3, &at).unwrap();
        assert_eq!(two.severity, Severity::Error);
        assert!(
            two.detail
                .contains("2 of the cluster's 3 control planes are gone"),
            "{two:?}"
        );
        assert!(
            two.detail
                .contains("needs 2 of them running, but at most 1 run"),
            "{two:?}"
        );
        // Two of five leave a quorum of three.
        let five = check(&slots(5), &recorded(&[1, 2, 3]), 5, &at).unwrap();
        assert_eq!(five.severity, Severity::Warning);
    }

    #[test]
    fn new_clusters_and_scaling_up_are_no_replacement() {
        let at = AttrPath::attr("control_plane");
        assert!(check(&slots(3), &[], 3, &at).is_none());
        assert!(check(&slots(5), &recorded(&[1, 2, 3]), 3, &at).is_none());
        assert!(check(&slots(3), &recorded(&[1, 2, 3]), 3, &at).is_none());
    }
}
