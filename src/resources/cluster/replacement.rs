//! Control planes whose servers are gone (deleted outside Terraform, or
//! lost) since the last finished apply, as the plan shows them. Each is
//! recreated at its IP under its name; etcd still lists it as a member,
//! and as the new node joins, Talos' etcd service removes the old member
//! of the same hostname before adding itself, so etcd ends with as many
//! members as before. That needs a
//! working etcd: while at least a quorum of the members etcd lists run, the
//! plan warns and says what apply does; with more gone than etcd can
//! lose, it is refused with the numbers (etcd must be recovered first).

use crate::cluster::NodeRecord;
use crate::cluster::slots::NodeSlot;
use crate::network_plan::etcd_quorum;
use crate::tf::{AttrPath, Diagnostic};

/// What the plan says of the control planes gone from state: `members`
/// are the slots of the last applied plan (each an etcd member: call this
/// only when that apply finished), `recorded` the nodes state holds after
/// refresh, `planned` how many control planes the plan wants now.
pub fn check(
    members: &[NodeSlot],
    recorded: &[NodeRecord],
    planned: u32,
    at: &AttrPath,
) -> Option<Diagnostic> {
    if recorded.is_empty() {
        return None; // a cluster being made again
    }
    let gone: Vec<&NodeSlot> = members
        .iter()
        .filter(|s| !recorded.iter().any(|n| n.name == s.name))
        .collect();
    if gone.is_empty() {
        return None;
    }
    let named = |slots: &[&NodeSlot]| {
        slots
            .iter()
            .map(|s| format!("{} ({})", s.name, s.ip))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let count = u32::try_from(members.len()).unwrap_or(u32::MAX);
    let lost = u32::try_from(gone.len()).unwrap_or(u32::MAX);
    let running = count.saturating_sub(lost);
    let needed = etcd_quorum(count);
    if running < needed {
        return Some(
            Diagnostic::error(
                "etcd has lost its quorum",
                format!(
                    "{lost} of the cluster's {count} control planes are gone ({}). etcd still \
                     lists all {count} as members and needs {needed} of them running, but at \
                     most {running} run, so no new control plane can join. Recover etcd first: \
                     take a snapshot on a surviving control plane (`talosctl etcd snapshot`), \
                     reset the survivors and bootstrap one of them with `talosctl bootstrap \
                     --recover-from`, then apply again.",
                    named(&gone)
                ),
            )
            .at(at.clone()),
        );
    }
    let (again, dropped): (Vec<&NodeSlot>, Vec<&NodeSlot>) =
        gone.iter().partition(|s| s.index <= planned);
    let mut detail = format!(
        "Their servers no longer exist; etcd still lists them as members ({running} of {count} \
         run, {needed} are needed)."
    );
    if !again.is_empty() {
        detail.push_str(&format!(
            " Apply creates {} again at the same IP and name; Talos removes the old member as \
             the new node joins.",
            named(&again)
        ));
    }
    if !dropped.is_empty() {
        detail.push_str(&format!(
            " {} leave{} the plan: etcd keeps listing {} (and counting {} for its quorum) until \
             removed, e.g. `talosctl -n <a control plane> etcd remove-member <name>`.",
            named(&dropped),
            if dropped.len() == 1 { "s" } else { "" },
            if dropped.len() == 1 { "it" } else { "them" },
            if dropped.len() == 1 { "it" } else { "them" },
        ));
    }
    Some(
        Diagnostic::warning(format!("Control planes gone: {}", named(&gone)), detail)
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
        assert!(
            one.detail.contains("creates c-cp-1 (10.0.128.17) again"),
            "{one:?}"
        );
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
    fn members_gone_beyond_a_smaller_plan_count_too() {
        let at = AttrPath::attr("control_plane");
        // 5 -> 3 with cp-1, cp-4 and cp-5 gone: 2 of 5 run, 3 are needed.
        let refused = check(&slots(5), &recorded(&[2, 3]), 3, &at).unwrap();
        assert_eq!(refused.severity, Severity::Error, "{refused:?}");
        // 5 -> 3 with cp-5 gone: it leaves the plan and stays in etcd.
        let left = check(&slots(5), &recorded(&[1, 2, 3, 4]), 3, &at).unwrap();
        assert_eq!(left.severity, Severity::Warning);
        assert!(
            left.detail.contains("c-cp-5 (10.0.128.21) leaves the plan"),
            "{left:?}"
        );
        assert!(left.detail.contains("etcd remove-member"), "{left:?}");
    }

    #[test]
    fn new_clusters_and_scaling_up_are_no_replacement() {
        let at = AttrPath::attr("control_plane");
        assert!(check(&slots(3), &[], 3, &at).is_none());
        assert!(check(&slots(3), &recorded(&[1, 2, 3]), 5, &at).is_none());
        assert!(check(&slots(3), &recorded(&[1, 2, 3]), 3, &at).is_none());
    }
}
