//! Where the ranges sit relative to each other: node groups inside the node
//! subnet inside the network, no two ranges sharing addresses, pods routable
//! by Hetzner, and Cilium's native routing limited to the pods.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::attributes::{Checked, CheckedGroup};
use super::cidr::{covers, overlaps};
use super::hetzner;
use super::input::{GroupRef, attr};
use super::nodes;
use crate::tf::diagnostics::{AttrPath, Diagnostic, Diagnostics};

pub(crate) fn check(c: &Checked, diags: &mut Diagnostics) {
    let node_subnet = node_subnet_in_network(c, diags);
    let misplaced = groups_in_node_subnet(c, node_subnet, diags);
    node_groups_disjoint(c, &misplaced, diags);
    nodes_avoid_reserved_addresses(c, node_subnet, &misplaced, diags);
    let services = service_cidr_clear_of_nodes(c, node_subnet, diags);
    pod_cidr_placement(c, node_subnet, services, diags);
    native_routing_only_pods(c, node_subnet, diags);
}

/// Rule: the node subnet lies inside the network. Returns the node subnet
/// when later checks may rely on it: a subnet outside the network is already
/// wrong, and measuring the groups against it would only add noise.
fn node_subnet_in_network(c: &Checked, diags: &mut Diagnostics) -> Option<Ipv4Net> {
    let subnet = c.node_subnet?;
    let Some(network) = c.network_cidr else {
        return Some(subnet);
    };
    if covers(network, subnet) {
        return Some(subnet);
    }
    diags.push(
        Diagnostic::error(
            "Node subnet outside the network",
            format!(
                "node_subnet = \"{subnet}\" is not inside network_cidr = \"{network}\"; Hetzner \
                 subnets must lie within their network. Pick a node_subnet inside {network}."
            ),
        )
        .at(AttrPath::attr(attr::NODE_SUBNET)),
    );
    None
}

/// Rule: each group's CIDR is a slice of the node subnet. Returns the groups
/// that are not, so no further complaints are piled onto them.
fn groups_in_node_subnet<'c>(
    c: &'c Checked,
    node_subnet: Option<Ipv4Net>,
    diags: &mut Diagnostics,
) -> Vec<GroupRef<'c>> {
    let Some(subnet) = node_subnet else {
        return Vec::new();
    };
    let mut misplaced = Vec::new();
    for (group, CheckedGroup { cidr, .. }) in c.groups() {
        let Some(cidr) = cidr else { continue };
        if covers(subnet, cidr) {
            continue;
        }
        diags.push(
            Diagnostic::error(
                "Node group outside the node subnet",
                format!(
                    "{path} = \"{cidr}\" is not inside node_subnet = \"{subnet}\"; node \
                     addresses must come from the Hetzner subnet the servers attach to. Pick \
                     a slice of {subnet} that no other group uses.",
                    path = group.cidr_path(),
                ),
            )
            .at(group.cidr_path()),
        );
        misplaced.push(group);
    }
    misplaced
}

/// Rule: no two node groups share addresses. Groups outside the node subnet
/// are left out: moving them into it is the fix, and may settle this too.
fn node_groups_disjoint(c: &Checked, misplaced: &[GroupRef<'_>], diags: &mut Diagnostics) {
    let groups: Vec<(GroupRef<'_>, Ipv4Net)> = c
        .groups()
        .filter(|(group, _)| !misplaced.contains(group))
        .filter_map(|(group, checked)| Some((group, checked.cidr?)))
        .collect();
    for (later_index, &(later, later_cidr)) in groups.iter().enumerate() {
        for &(earlier, earlier_cidr) in &groups[..later_index] {
            if !overlaps(earlier_cidr, later_cidr) {
                continue;
            }
            diags.push(
                Diagnostic::error(
                    "Node groups overlap",
                    format!(
                        "{later_path} = \"{later_cidr}\" overlaps {earlier_path} = \
                         \"{earlier_cidr}\"; nodes of both groups would get the same \
                         addresses. Give each group its own slice of the node subnet.",
                        later_path = later.cidr_path(),
                        earlier_path = earlier.cidr_path(),
                    ),
                )
                .at(later.cidr_path()),
            );
        }
    }
}

/// Rule: no node is assigned the network gateway or an edge of the node subnet.
fn nodes_avoid_reserved_addresses(
    c: &Checked,
    node_subnet: Option<Ipv4Net>,
    misplaced: &[GroupRef<'_>],
    diags: &mut Diagnostics,
) {
    let mut reserved: Vec<(Ipv4Addr, String)> = Vec::new();
    if let Some(network) = c.network_cidr
        && let Some(gateway) = hetzner::gateway(network)
    {
        let why = format!("the network gateway (first host of network_cidr = \"{network}\")");
        reserved.push((gateway, why));
    }
    // Within a group that lies in the subnet and fits its nodes these cannot
    // be hit; they are listed so the rule holds on its own.
    if let Some(subnet) = node_subnet {
        reserved.push((
            subnet.network(),
            format!("the network address of node_subnet = \"{subnet}\""),
        ));
        reserved.push((
            subnet.broadcast(),
            format!("the broadcast address of node_subnet = \"{subnet}\""),
        ));
    }

    for (group, checked) in c.groups() {
        let (Some(cidr), Some(count)) = (checked.cidr, checked.nodes) else {
            continue;
        };
        // Misplaced or too-small groups have their own error already.
        if misplaced.contains(&group) || u64::from(count) > nodes::capacity(cidr.prefix_len()) {
            continue;
        }
        let collision = reserved.iter().find_map(|(addr, why)| {
            nodes::node_assigned(cidr, count, *addr).map(|index| (index, addr, why))
        });
        if let Some((index, addr, why)) = collision {
            diags.push(
                Diagnostic::error(
                    "Node would get a reserved address",
                    format!(
                        "{path} = \"{cidr}\": the node at index {index} would get {addr}, \
                         {why}. Move the group to a slice of the node subnet that does not \
                         include {addr}.",
                        path = group.cidr_path(),
                    ),
                )
                .at(group.cidr_path()),
            );
        }
    }
}

/// The first node range that `range` overlaps, described for a message: the
/// node subnet when it is usable, otherwise the individual group CIDRs.
fn node_range_overlapping(
    c: &Checked,
    node_subnet: Option<Ipv4Net>,
    range: Ipv4Net,
) -> Option<String> {
    if let Some(subnet) = node_subnet {
        return overlaps(subnet, range).then(|| format!("node_subnet = \"{subnet}\""));
    }
    c.groups().find_map(|(group, checked)| {
        let cidr = checked.cidr?;
        overlaps(cidr, range).then(|| format!("{} = \"{cidr}\"", group.cidr_path()))
    })
}

/// Rule: service IPs are virtual and must not shadow real node addresses.
/// Returns the service CIDR when it is clear, for the pod CIDR's checks.
fn service_cidr_clear_of_nodes(
    c: &Checked,
    node_subnet: Option<Ipv4Net>,
    diags: &mut Diagnostics,
) -> Option<Ipv4Net> {
    let services = c.service_cidr?;
    let Some(nodes) = node_range_overlapping(c, node_subnet, services) else {
        return Some(services);
    };
    diags.push(
        Diagnostic::error(
            "Service CIDR overlaps the nodes",
            format!(
                "service_cidr = \"{services}\" overlaps {nodes}; service IPs are virtual and \
                 would shadow real node addresses. Pick a service_cidr outside the node ranges."
            ),
        )
        .at(AttrPath::attr(attr::SERVICE_CIDR)),
    );
    None
}

/// Rules: the pod CIDR overlaps neither nodes nor services, lies inside the
/// network when the cluster spans datacenters, and avoids the addresses
/// Hetzner refuses to route. Reports the first problem only: they share one
/// fix, a different pod CIDR.
fn pod_cidr_placement(
    c: &Checked,
    node_subnet: Option<Ipv4Net>,
    services: Option<Ipv4Net>,
    diags: &mut Diagnostics,
) {
    let Some(pods) = c.pod_cidr else { return };
    let problem = pod_cidr_problem(c, node_subnet, services, pods);
    if let Some((summary, detail)) = problem {
        diags.push(Diagnostic::error(summary, detail).at(AttrPath::attr(attr::POD_CIDR)));
    }
}

fn pod_cidr_problem(
    c: &Checked,
    node_subnet: Option<Ipv4Net>,
    services: Option<Ipv4Net>,
    pods: Ipv4Net,
) -> Option<(&'static str, String)> {
    if let Some(nodes) = node_range_overlapping(c, node_subnet, pods) {
        return Some((
            "Pod CIDR overlaps the nodes",
            format!(
                "pod_cidr = \"{pods}\" overlaps {nodes}; pods and nodes would share addresses. \
                 Pick a pod_cidr outside the node ranges."
            ),
        ));
    }
    if let Some(services) = services
        && overlaps(pods, services)
    {
        return Some((
            "Pod CIDR overlaps the service CIDR",
            format!(
                "pod_cidr = \"{pods}\" overlaps service_cidr = \"{services}\"; pod and service \
                 addresses must be distinct. Move one of them."
            ),
        ));
    }
    let network = c.network_cidr?;
    if c.multi_datacenter == Some(true) && !covers(network, pods) {
        return Some((
            "Pod CIDR outside the network in a multi-datacenter cluster",
            format!(
                "multi_datacenter = true, but pod_cidr = \"{pods}\" is not inside \
                 network_cidr = \"{network}\". Between datacenters pod traffic travels over \
                 Hetzner routes, which can carry it only inside the network. Pick a pod_cidr \
                 inside {network} that overlaps no other range."
            ),
        ));
    }
    let gateway = hetzner::gateway(network)?;
    let unroutable = [gateway, hetzner::PUBLIC_GATEWAY]
        .into_iter()
        .find(|addr| pods.contains(addr))?;
    Some((
        "Pod CIDR covers an address Hetzner cannot route",
        format!(
            "pod_cidr = \"{pods}\" contains {unroutable}, which Hetzner refuses as part of a \
             route destination ({gateway} is the network gateway, {public} the servers' public \
             gateway). The node whose pod range holds it could not be routed. Pick a pod_cidr \
             that excludes {unroutable}.",
            public = hetzner::PUBLIC_GATEWAY,
        ),
    ))
}

/// Rule: Cilium's native routing CIDR is the pod CIDR, nothing more.
///
/// Cilium does not masquerade traffic to destinations inside that CIDR. If it
/// covers the nodes, pod traffic to nodes and through the NAT leaves with a pod
/// source address, and Hetzner's gateway silently drops packets whose source
/// is not a known server IP (anti-spoofing).
fn native_routing_only_pods(c: &Checked, node_subnet: Option<Ipv4Net>, diags: &mut Diagnostics) {
    let Some(native) = c.native_routing_cidr else {
        return;
    };
    // Equal to the pod CIDR (the default): the pod CIDR's own checks cover it.
    if c.pod_cidr == Some(native) {
        return;
    }
    let use_pods = match c.pod_cidr {
        Some(pods) => {
            format!("Set native_routing_cidr to the pod CIDR, \"{pods}\", or leave it unset.")
        }
        None => "Set native_routing_cidr to the pod CIDR, or leave it unset.".to_owned(),
    };
    let path = AttrPath::attr(attr::NATIVE_ROUTING_CIDR);
    if let Some(nodes) = node_range_overlapping(c, node_subnet, native) {
        diags.push(
            Diagnostic::error(
                "Native routing CIDR covers the nodes",
                format!(
                    "native_routing_cidr = \"{native}\" overlaps {nodes}. Cilium does not \
                     masquerade traffic to the native routing CIDR, so pod traffic to nodes and \
                     through the NAT would leave with pod source addresses, and Hetzner's \
                     gateway silently drops packets whose source is not a known server IP \
                     (uRPF / anti-spoofing). {use_pods}"
                ),
            )
            .at(path),
        );
    } else if let Some(pods) = c.pod_cidr
        && !covers(native, pods)
    {
        diags.push(
            Diagnostic::error(
                "Native routing CIDR does not contain the pod CIDR",
                format!(
                    "native_routing_cidr = \"{native}\" does not contain pod_cidr = \"{pods}\"; \
                     Cilium would masquerade pod-to-pod traffic between nodes instead of \
                     routing it natively. {use_pods}"
                ),
            )
            .at(path),
        );
    }
}
