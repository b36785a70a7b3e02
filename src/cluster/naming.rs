//! Names and labels of what hct creates on Hetzner.
//!
//! Every server and placement group carries `managed-by=hct`, its cluster
//! and its group (`cp` or the pool's name). Listing by these labels is how
//! hct finds its servers after a lost answer or a killed run, so a rerun
//! adopts them instead of creating duplicates, and how it finds orphans.

use crate::hcloud::LabelSelector;
use crate::hcloud::models::Labels;

pub const MANAGED_BY: &str = "managed-by";
pub const MANAGED_BY_HCT: &str = "hct";
pub const CLUSTER: &str = "cluster";
pub const POOL: &str = "pool";
pub const ROLE: &str = "role";
/// Which secrets a server's config was made with (a fingerprint of the OS
/// CA certificate, which is public). A server of ours whose fingerprint
/// differs comes from a run whose secrets were lost (killed before
/// Terraform saved state): it can never join, so it is replaced.
pub const SECRETS: &str = "talos-ca";

/// Label keys hct sets itself; users may not set them in `server_labels`.
pub const RESERVED_LABELS: [&str; 5] = [MANAGED_BY, CLUSTER, POOL, ROLE, SECRETS];

/// `<cluster>-cp-<n>` or `<cluster>-<pool>-<n>`, n counted from 1.
pub fn server_name(cluster: &str, group: &str, n: u32) -> String {
    format!("{cluster}-{group}-{n}")
}

/// `<cluster>-<group>-spread-<k>`, k counted from 1.
pub fn placement_group_name(cluster: &str, group: &str, k: u32) -> String {
    format!("{cluster}-{group}-spread-{k}")
}

/// The labels of a group's servers: the user's, then hct's (which win).
pub fn server_labels(
    cluster: &str,
    group: &str,
    role: &str,
    secrets: &str,
    user: &Labels,
) -> Labels {
    let mut labels = user.clone();
    labels.extend(group_labels(cluster, group));
    labels.insert(ROLE.into(), role.into());
    labels.insert(SECRETS.into(), secrets.into());
    labels
}

/// The labels of a group's placement groups.
pub fn group_labels(cluster: &str, group: &str) -> Labels {
    Labels::from([
        (MANAGED_BY.into(), MANAGED_BY_HCT.into()),
        (CLUSTER.into(), cluster.into()),
        (POOL.into(), group.into()),
    ])
}

/// Selects everything hct made for a cluster.
pub fn cluster_selector(cluster: &str) -> LabelSelector {
    LabelSelector::new()
        .eq(MANAGED_BY, MANAGED_BY_HCT)
        .eq(CLUSTER, cluster)
}

/// Selects everything hct made for one group of a cluster.
pub fn group_selector(cluster: &str, group: &str) -> LabelSelector {
    LabelSelector::new()
        .eq(MANAGED_BY, MANAGED_BY_HCT)
        .eq(CLUSTER, cluster)
        .eq(POOL, group)
}

/// The user's part of a server's labels (hct's own keys removed).
pub fn user_labels(labels: &Labels) -> Labels {
    labels
        .iter()
        .filter(|(key, _)| !RESERVED_LABELS.contains(&key.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The node index `n` of a server name of this group, if it is one.
pub fn node_index(cluster: &str, group: &str, name: &str) -> Option<u32> {
    let n = name.strip_prefix(&format!("{cluster}-{group}-"))?;
    if n.starts_with('0') {
        return None;
    }
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_count_from_one_and_parse_back() {
        assert_eq!(server_name("noreturn", "cp", 1), "noreturn-cp-1");
        assert_eq!(node_index("noreturn", "cp", "noreturn-cp-12"), Some(12));
        assert_eq!(node_index("noreturn", "cp", "noreturn-cp-01"), None);
        assert_eq!(node_index("noreturn", "cp", "noreturn-general-1"), None);
        assert_eq!(
            placement_group_name("noreturn", "general", 2),
            "noreturn-general-spread-2"
        );
    }

    #[test]
    fn hct_labels_win_over_the_users() {
        let user = Labels::from([
            ("team".to_string(), "infra".to_string()),
            ("cluster".to_string(), "other".to_string()),
        ]);
        let labels = server_labels("noreturn", "general", "worker", "0123abcd", &user);
        assert_eq!(labels["cluster"], "noreturn");
        assert_eq!(labels["team"], "infra");
        assert_eq!(labels["role"], "worker");
        assert_eq!(
            user_labels(&labels),
            Labels::from([("team".to_string(), "infra".to_string())])
        );
    }
}
