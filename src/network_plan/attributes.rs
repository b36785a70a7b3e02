//! Checks each input on its own and keeps only the values that passed.
//!
//! The checks that combine inputs (`layout`, `capacity`) see only values that
//! are known and individually valid, so one bad CIDR yields one error instead
//! of a cascade of follow-on complaints.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use super::cidr::{self, CidrError};
use super::endpoint::{self, ApiEndpoint, EndpointMode};
use super::hetzner;
use super::input::{GroupRef, NetworkPlanInput, NodeGroupInput, attr};
use super::names::CONTROL_PLANE_GROUP;
use crate::tf::diagnostics::{AttrPath, Diagnostic, Diagnostics};

/// Per-node pod ranges longer than /28 (16 addresses) cannot even hold a
/// node's system pods.
pub(crate) const LONGEST_POD_MASK: u8 = 28;

/// The inputs that are known and valid on their own; `None` otherwise.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub network_cidr: Option<Ipv4Net>,
    pub node_subnet: Option<Ipv4Net>,
    pub control_plane: CheckedGroup,
    /// `None` while the map itself is unknown.
    pub worker_pools: Option<BTreeMap<String, CheckedGroup>>,
    pub service_cidr: Option<Ipv4Net>,
    pub pod_cidr: Option<Ipv4Net>,
    pub pod_cidr_mask_size: Option<u8>,
    pub native_routing_cidr: Option<Ipv4Net>,
    pub multi_datacenter: Option<bool>,
    pub api_endpoint: Option<EndpointMode>,
    /// Settled by `endpoint::resolve` once the layout is checked.
    pub endpoint: Option<ApiEndpoint>,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CheckedGroup {
    pub cidr: Option<Ipv4Net>,
    pub nodes: Option<u32>,
}

/// Nodes across all groups, as far as they are known.
pub(crate) struct NodeTotal {
    pub known: u64,
    /// Every group's count is known, so `known` is the real total.
    pub complete: bool,
}

impl Checked {
    /// The control plane, then the worker pools in name order.
    pub fn groups(&self) -> impl Iterator<Item = (GroupRef<'_>, CheckedGroup)> {
        let pools = self.worker_pools.iter().flatten();
        std::iter::once((GroupRef::ControlPlane, self.control_plane))
            .chain(pools.map(|(name, group)| (GroupRef::Pool(name), *group)))
    }

    pub fn node_total(&self) -> NodeTotal {
        let counts: Vec<Option<u32>> = self.groups().map(|(_, group)| group.nodes).collect();
        NodeTotal {
            known: counts.iter().flatten().map(|&nodes| u64::from(nodes)).sum(),
            complete: self.worker_pools.is_some() && counts.iter().all(Option::is_some),
        }
    }
}

pub(crate) fn check(input: &NetworkPlanInput, diags: &mut Diagnostics) -> Checked {
    let network_cidr = cidr_attr(attr::NETWORK_CIDR, input.network_cidr.as_deref(), diags)
        .filter(|&network| hetzner_network(network, diags));
    let node_subnet = cidr_attr(attr::NODE_SUBNET, input.node_subnet.as_deref(), diags);

    let control_plane = match &input.control_plane {
        Some(group) => node_group(GroupRef::ControlPlane, group, diags),
        None => CheckedGroup::default(),
    };
    if let Some(nodes) = control_plane.nodes {
        control_plane_size(nodes, diags);
    }
    let worker_pools = input.worker_pools.as_ref().map(|pools| {
        pools
            .iter()
            .map(|(name, group)| {
                pool_name(name, diags);
                (name.clone(), node_group(GroupRef::Pool(name), group, diags))
            })
            .collect()
    });

    let service_cidr = cidr_attr(attr::SERVICE_CIDR, input.service_cidr.as_deref(), diags);
    let pod_cidr = cidr_attr(attr::POD_CIDR, input.pod_cidr.as_deref(), diags)
        .filter(|&pods| pod_cidr_routable(pods, diags));
    let pod_cidr_mask_size = input
        .pod_cidr_mask_size
        .and_then(|mask| pod_mask(mask, diags));

    // `native_routing_cidr` defaults to the very text of `pod_cidr`; a bad pod
    // CIDR has been reported already and must not be reported twice.
    let native_routing_cidr = if input.native_routing_cidr == input.pod_cidr {
        pod_cidr
    } else {
        let text = input.native_routing_cidr.as_deref();
        cidr_attr(attr::NATIVE_ROUTING_CIDR, text, diags)
    };

    Checked {
        network_cidr,
        node_subnet,
        control_plane,
        worker_pools,
        service_cidr,
        pod_cidr,
        pod_cidr_mask_size,
        native_routing_cidr,
        multi_datacenter: input.multi_datacenter,
        api_endpoint: endpoint::check_attributes(
            input.api_endpoint.as_deref(),
            input.load_balancer_ip.as_ref().map(Option::as_deref),
            diags,
        ),
        endpoint: None,
    }
}

fn node_group(
    group: GroupRef<'_>,
    input: &NodeGroupInput,
    diags: &mut Diagnostics,
) -> CheckedGroup {
    CheckedGroup {
        cidr: input
            .cidr
            .as_deref()
            .and_then(|text| parse_cidr(group.cidr_path(), text, diags)),
        nodes: input
            .nodes
            .and_then(|nodes| node_count(group.nodes_path(), nodes, diags)),
    }
}

/// Rule: every CIDR is IPv4 and written canonically.
fn cidr_attr(name: &str, text: Option<&str>, diags: &mut Diagnostics) -> Option<Ipv4Net> {
    parse_cidr(AttrPath::attr(name), text?, diags)
}

fn parse_cidr(path: AttrPath, text: &str, diags: &mut Diagnostics) -> Option<Ipv4Net> {
    let diagnostic = match cidr::parse(text) {
        Ok(net) => return Some(net),
        Err(CidrError::Unparsable) => Diagnostic::error(
            "Not an IPv4 CIDR",
            format!(
                "{path} = {text:?} is not in CIDR notation. Write an IPv4 address and a \
                 prefix length, e.g. \"10.0.0.0/16\"."
            ),
        ),
        Err(CidrError::NotIpv4) => Diagnostic::error(
            "Not an IPv4 CIDR",
            format!(
                "{path} = {text:?} is an IPv6 range, but Hetzner private networks are IPv4 \
                 only. Use an IPv4 CIDR, e.g. \"10.0.0.0/16\"."
            ),
        ),
        Err(CidrError::NotCanonical(canonical)) => Diagnostic::error(
            "CIDR does not start at its network address",
            format!(
                "{path} = {text:?} has host bits set: a /{prefix} starting there does not \
                 exist. Use \"{canonical}\" (the network address of that /{prefix}), or \
                 change the prefix length.",
                prefix = canonical.prefix_len(),
            ),
        ),
    };
    diags.push(diagnostic.at(path));
    None
}

/// Rule: Hetzner accepts only RFC 1918 networks of at least a /24.
fn hetzner_network(network: Ipv4Net, diags: &mut Diagnostics) -> bool {
    let path = AttrPath::attr(attr::NETWORK_CIDR);
    if !hetzner::is_private(network) {
        diags.push(
            Diagnostic::error(
                "Network is not in a private range",
                format!(
                    "network_cidr = \"{network}\" is not inside an RFC 1918 private range; \
                     Hetzner networks must lie within 10.0.0.0/8, 172.16.0.0/12 or \
                     192.168.0.0/16. Use e.g. \"10.0.0.0/16\"."
                ),
            )
            .at(path),
        );
        return false;
    }
    if network.prefix_len() > hetzner::LONGEST_NETWORK_PREFIX {
        diags.push(
            Diagnostic::error(
                "Network is too small",
                format!(
                    "network_cidr = \"{network}\" is a /{}, but Hetzner's smallest network is \
                     a /{}. Use a /{} or larger; a /16 leaves room to grow.",
                    network.prefix_len(),
                    hetzner::LONGEST_NETWORK_PREFIX,
                    hetzner::LONGEST_NETWORK_PREFIX,
                ),
            )
            .at(path),
        );
        return false;
    }
    true
}

/// Rule: the pod CIDR must be a valid Hetzner route destination, because the
/// Hetzner cloud controller manager routes each node's pod range through the
/// network.
fn pod_cidr_routable(pods: Ipv4Net, diags: &mut Diagnostics) -> bool {
    if hetzner::is_private(pods) {
        return true;
    }
    diags.push(
        Diagnostic::error(
            "Pod CIDR is not in a private range",
            format!(
                "pod_cidr = \"{pods}\" is not inside an RFC 1918 private range. The Hetzner \
                 cloud controller manager creates a Hetzner route for each node's pod range, \
                 and Hetzner accepts only route destinations within 10.0.0.0/8, \
                 172.16.0.0/12 or 192.168.0.0/16. Pick a pod CIDR there."
            ),
        )
        .at(AttrPath::attr(attr::POD_CIDR)),
    );
    false
}

/// Rule: node counts are whole, non-negative numbers a network can hold.
fn node_count(path: AttrPath, nodes: i64, diags: &mut Diagnostics) -> Option<u32> {
    if nodes < 0 {
        diags.push(
            Diagnostic::error(
                "Negative node count",
                format!("{path} = {nodes} is negative; a node count must be 0 or more."),
            )
            .at(path),
        );
        return None;
    }
    match u32::try_from(nodes) {
        Ok(nodes) => Some(nodes),
        Err(_) => {
            diags.push(
                Diagnostic::error(
                    "Too many nodes",
                    format!(
                        "{path} = {nodes} is far beyond Hetzner's limit of {} servers per \
                         network.",
                        hetzner::MAX_SERVERS_PER_NETWORK
                    ),
                )
                .at(path),
            );
            None
        }
    }
}

/// How many of `members` etcd needs running (a majority).
pub fn etcd_quorum(members: u32) -> u32 {
    members / 2 + 1
}

/// Rule: etcd needs at least one member, and an odd count to make the most of
/// its majority quorum.
fn control_plane_size(nodes: u32, diags: &mut Diagnostics) {
    let path = GroupRef::ControlPlane.nodes_path();
    if nodes == 0 {
        diags.push(
            Diagnostic::error(
                "Control plane needs at least one node",
                "control_plane.nodes = 0, but etcd and the Kubernetes API run on the \
                 control-plane nodes. Use 1 for a test cluster, or 3 for high availability.",
            )
            .at(path),
        );
    } else if nodes.is_multiple_of(2) {
        let quorum = etcd_quorum(nodes);
        let tolerated = (nodes - 1) / 2;
        diags.push(
            Diagnostic::warning(
                "Even number of control-plane nodes",
                format!(
                    "control_plane.nodes = {nodes}: etcd needs a quorum of {quorum} of {nodes}, \
                     so the cluster survives {tolerated} failed node(s), no better fault \
                     tolerance than {} nodes while adding a member to keep in sync. Use {} \
                     or {}.",
                    nodes - 1,
                    nodes - 1,
                    nodes + 1,
                ),
            )
            .at(path),
        );
    }
}

/// Rule: pool names become part of server names `<cluster>-<pool>-<n>`.
fn pool_name(name: &str, diags: &mut Diagnostics) {
    let path = AttrPath::attr(attr::WORKER_POOLS).key(name);
    if name == CONTROL_PLANE_GROUP {
        diags.push(
            Diagnostic::error(
                "Reserved worker pool name",
                "The worker pool name \"cp\" is reserved: control-plane servers are named \
                 <cluster>-cp-<n>, so servers of a pool \"cp\" would collide with them. \
                 Choose another name, e.g. \"compute\".",
            )
            .at(path),
        );
    } else if !is_dns_label(name) {
        diags.push(
            Diagnostic::error(
                "Worker pool name is not a DNS label",
                format!(
                    "The worker pool name {name:?} becomes part of the server names \
                     <cluster>-{name}-<n>, so it must be a DNS label: lowercase letters a-z, \
                     digits and '-', starting with a letter, ending with a letter or digit, \
                     at most 63 characters."
                ),
            )
            .at(path),
        );
    }
}

fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= 63
        && first.is_ascii_lowercase()
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// Rule: each node's pod range is between a /1 and a /28.
fn pod_mask(mask: i64, diags: &mut Diagnostics) -> Option<u8> {
    match u8::try_from(mask) {
        Ok(mask @ 1..=LONGEST_POD_MASK) => Some(mask),
        _ => {
            diags.push(
                Diagnostic::error(
                    "Pod CIDR mask size out of range",
                    format!(
                        "pod_cidr_mask_size = {mask}, but each node's pod range must be \
                         between a /1 and a /{LONGEST_POD_MASK} (16 addresses, too few for \
                         anything longer to hold a node's system pods). Use 24, the default: \
                         256 pod addresses per node."
                    ),
                )
                .at(AttrPath::attr(attr::POD_CIDR_MASK_SIZE)),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        let cases = [
            ("platform", true),
            ("gpu-a100", true),
            ("a", true),
            ("a1", true),
            ("", false),
            ("Platform", false),
            ("1pool", false),
            ("-pool", false),
            ("pool-", false),
            ("pool_1", false),
            ("pööl", false),
            (&"a".repeat(63), true),
            (&"a".repeat(64), false),
        ];
        for (name, valid) in cases {
            assert_eq!(is_dns_label(name), valid, "{name:?}");
        }
    }
}
