//! Whether the ranges hold the nodes: each group its own nodes, the pod CIDR
//! one per-node pod range per node, and the network Hetzner's server limit.

use ipnet::Ipv4Net;

use super::attributes::{Checked, LONGEST_POD_MASK, NodeTotal};
use super::hetzner;
use super::input::{GroupRef, attr};
use super::nodes;
use crate::tf::diagnostics::{AttrPath, Diagnostic, Diagnostics};

/// kube-controller-manager splits the pod CIDR into at most 2^16 per-node
/// ranges and refuses to start with more.
const MAX_NODE_RANGE_BITS: u8 = 16;

/// How many nodes the pod CIDR serves: one `/mask` per node
/// (a /19 split into /24s serves 32).
pub(crate) fn max_nodes(pod_cidr: Ipv4Net, mask: u8) -> Option<u32> {
    let bits = mask.checked_sub(pod_cidr.prefix_len())?;
    1u32.checked_shl(u32::from(bits))
}

pub(crate) fn check(c: &Checked, diags: &mut Diagnostics) {
    groups_hold_their_nodes(c, diags);
    let total = c.node_total();
    within_hetzner_server_limit(c, &total, diags);
    if let Some((pods, mask)) = pod_ranges_fit(c, diags) {
        pod_cidr_serves_all_nodes(pods, mask, &total, diags);
    }
}

/// Rule: a group's CIDR holds its nodes (all addresses but network and broadcast).
fn groups_hold_their_nodes(c: &Checked, diags: &mut Diagnostics) {
    for (group, checked) in c.groups() {
        let (Some(cidr), Some(count)) = (checked.cidr, checked.nodes) else {
            continue;
        };
        let holds = nodes::capacity(cidr.prefix_len());
        if u64::from(count) <= holds {
            continue;
        }
        let fix = match nodes::prefix_holding(count) {
            Some(prefix) => format!(
                "Use a /{prefix} or larger (holds {}), or fewer nodes.",
                nodes::capacity(prefix)
            ),
            None => "No IPv4 range holds that many nodes; use fewer.".to_owned(),
        };
        diags.push(
            Diagnostic::error(
                "Node group CIDR too small",
                format!(
                    "{cidr_path} = \"{cidr}\" holds {holds} nodes (a /{prefix} minus its network \
                     and broadcast addresses), but {nodes_path} = {count}. {fix}",
                    cidr_path = group.cidr_path(),
                    prefix = cidr.prefix_len(),
                    nodes_path = group.nodes_path(),
                ),
            )
            .at(group.cidr_path()),
        );
    }
}

/// Rule: Hetzner attaches at most 100 servers to one network. Unknown counts
/// are at least 0, so a known sum over the limit is already an error.
fn within_hetzner_server_limit(c: &Checked, total: &NodeTotal, diags: &mut Diagnostics) {
    let limit = hetzner::MAX_SERVERS_PER_NETWORK;
    if total.known <= u64::from(limit) {
        return;
    }
    let control_plane = c.control_plane.nodes.unwrap_or(0);
    let path = if control_plane > limit {
        GroupRef::ControlPlane.nodes_path()
    } else {
        AttrPath::attr(attr::WORKER_POOLS)
    };
    diags.push(
        Diagnostic::error(
            "Too many nodes for one Hetzner network",
            format!(
                "{at_least}{known} nodes in total ({control_plane} control plane, {workers} in \
                 worker pools), but Hetzner attaches at most {limit} servers to one network. \
                 Reduce the node counts.",
                at_least = if total.complete { "" } else { "at least " },
                known = total.known,
                workers = total.known - u64::from(control_plane),
            ),
        )
        .at(path),
    );
}

/// Rules: each node's pod range is longer than the pod CIDR, and the pod CIDR
/// splits into at most 2^16 of them. Returns the pair when it is usable.
fn pod_ranges_fit(c: &Checked, diags: &mut Diagnostics) -> Option<(Ipv4Net, u8)> {
    let (pods, mask) = (c.pod_cidr?, c.pod_cidr_mask_size?);
    let prefix = pods.prefix_len();
    let path = AttrPath::attr(attr::POD_CIDR_MASK_SIZE);
    if mask <= prefix {
        let fix = if prefix < LONGEST_POD_MASK {
            format!(
                "Use a mask size between {} and {LONGEST_POD_MASK}; 24 gives each node 256 pod \
                 addresses.",
                prefix + 1
            )
        } else {
            format!("Use a pod_cidr shorter than /{LONGEST_POD_MASK}, e.g. a /16.")
        };
        diags.push(
            Diagnostic::error(
                "Pod CIDR mask size not longer than the pod CIDR",
                format!(
                    "pod_cidr_mask_size = {mask} must be longer than the prefix of pod_cidr = \
                     \"{pods}\" (/{prefix}): each node gets one /{mask} out of the pod CIDR. \
                     {fix}"
                ),
            )
            .at(path),
        );
        return None;
    }
    if mask - prefix > MAX_NODE_RANGE_BITS {
        diags.push(
            Diagnostic::error(
                "Too many per-node pod ranges",
                format!(
                    "pod_cidr_mask_size = {mask} splits pod_cidr = \"{pods}\" into 2^{bits} \
                     per-node ranges, but kube-controller-manager handles at most \
                     2^{MAX_NODE_RANGE_BITS} and refuses to start. Use a pod_cidr of /{} or \
                     longer, or pod_cidr_mask_size = {} or less.",
                    mask - MAX_NODE_RANGE_BITS,
                    prefix + MAX_NODE_RANGE_BITS,
                    bits = mask - prefix,
                ),
            )
            .at(path),
        );
        return None;
    }
    Some((pods, mask))
}

/// Rule: every node gets its own /mask out of the pod CIDR.
fn pod_cidr_serves_all_nodes(pods: Ipv4Net, mask: u8, total: &NodeTotal, diags: &mut Diagnostics) {
    let Some(max) = max_nodes(pods, mask) else {
        return;
    };
    if total.known <= u64::from(max) {
        return;
    }
    // The fewest extra bits that give every node a range: 2^bits >= total.
    let bits = (0..=32u8)
        .find(|&bits| 1u64 << bits >= total.known)
        .unwrap_or(32);
    let mut fixes = Vec::new();
    if let Some(prefix) = mask.checked_sub(bits) {
        fixes.push(format!("a /{prefix} or larger pod_cidr"));
    }
    let longer_mask = pods.prefix_len().saturating_add(bits);
    if longer_mask <= LONGEST_POD_MASK {
        fixes.push(format!(
            "pod_cidr_mask_size = {longer_mask} (smaller per-node ranges)"
        ));
    }
    let fix = if fixes.is_empty() {
        "Use fewer nodes.".to_owned()
    } else {
        format!("Use {}.", fixes.join(", or "))
    };
    diags.push(
        Diagnostic::error(
            "Pod CIDR too small for the nodes",
            format!(
                "{at_least}{known} nodes in total, but pod_cidr = \"{pods}\" split into one /{mask} \
                 per node holds {max}. {fix}",
                at_least = if total.complete { "" } else { "at least " },
                known = total.known,
            ),
        )
        .at(AttrPath::attr(attr::POD_CIDR)),
    );
}
