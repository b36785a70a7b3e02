//! `KubeNetworkConfig`, Talos v1.14's document for the pod and service
//! ranges and the size of the pod range each node gets, and Talos' checks
//! of it: a range or two (one per IP family) each, network addresses with
//! room for hosts, pod ranges that hold from one to 2^16 node ranges,
//! service ranges of at most 2^20 addresses, as many pod as service
//! ranges.

use ipnet::IpNet;
use serde::Deserialize;

/// `KubeNetworkConfig` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KubeNetwork {
    pub pod_subnets: Vec<String>,
    pub service_subnets: Vec<String>,
    #[serde(rename = "nodeCIDRMaskSizeIPv4")]
    pub node_cidr_mask_size_ipv4: Option<i64>,
    #[serde(rename = "nodeCIDRMaskSizeIPv6")]
    pub node_cidr_mask_size_ipv6: Option<i64>,
}

/// The per-node pod range sizes Talos defaults to (`nodeCIDRMaskSizeIPv4`,
/// `…IPv6`), and how far apart that size and the pod range's may be.
pub(super) const NODE_MASK_IPV4: u8 = 24;
const NODE_MASK_IPV6: i64 = 64;
const NODE_MASK_MAX_DIFF: i64 = 16;
/// A service range holds at most 2^20 addresses.
const SERVICE_MAX_HOST_BITS: i64 = 20;
/// A range smaller than 2^4 addresses is refused.
const MIN_HOST_BITS: i64 = 4;

/// Talos' checks of one list of ranges of `KubeNetworkConfig`: one or two
/// (one per IP family), each a network address with room for hosts, and
/// of a size `size` accepts.
fn check_ranges(
    entries: &[String],
    size: impl Fn(&IpNet) -> Result<(), String>,
) -> Result<(), String> {
    if entries.is_empty() {
        return Err("at least one subnet must be specified".into());
    }
    if entries.len() > 2 {
        return Err("at most two subnets can be specified for dual-stack clusters".into());
    }
    let mut families = [0, 0];
    for entry in entries {
        let net: IpNet = entry
            .trim()
            .parse()
            .map_err(|_| format!("invalid subnet: {entry:?} is not a CIDR"))?;
        if net.trunc() != net {
            return Err(format!("invalid subnet: {net} is not a valid CIDR"));
        }
        let bits = i64::from(net.prefix_len());
        if i64::from(net.max_prefix_len()) - bits < MIN_HOST_BITS {
            return Err(format!(
                "invalid subnet: /{bits} is too small, it must be larger than /{}",
                bits - MIN_HOST_BITS
            ));
        }
        size(&net)?;
        families[usize::from(matches!(net, IpNet::V6(_)))] += 1;
    }
    if families.iter().any(|n| *n > 1) {
        return Err(
            "at most one IPv4 and one IPv6 subnet can be specified for dual-stack clusters".into(),
        );
    }
    Ok(())
}

/// What Talos v1.14 checks of `KubeNetworkConfig` (the first failure).
pub(super) fn check_kube_network(doc: &KubeNetwork) -> Result<(), String> {
    let v4 = doc.node_cidr_mask_size_ipv4.unwrap_or(0);
    let v6 = doc.node_cidr_mask_size_ipv6.unwrap_or(0);
    if v4 != 0 && !(1..=32).contains(&v4) {
        return Err("nodeCIDRMaskSizeIPv4 must be between 1 and 32".into());
    }
    if v6 != 0 && !(1..=128).contains(&v6) {
        return Err("nodeCIDRMaskSizeIPv6 must be between 1 and 128".into());
    }
    let mask4 = if v4 == 0 {
        i64::from(NODE_MASK_IPV4)
    } else {
        v4
    };
    let mask6 = if v6 == 0 { NODE_MASK_IPV6 } else { v6 };
    check_ranges(&doc.pod_subnets, |net| {
        let mask = if matches!(net, IpNet::V6(_)) {
            mask6
        } else {
            mask4
        };
        let bits = i64::from(net.prefix_len());
        if bits > mask {
            return Err(format!(
                "invalid subnet: {net} is smaller than the per-node pod CIDR mask size /{mask}"
            ));
        }
        if mask - bits > NODE_MASK_MAX_DIFF {
            return Err(format!(
                "invalid subnet: {net} is too large for the per-node pod CIDR mask size \
                 /{mask}, the difference must be at most {NODE_MASK_MAX_DIFF} bits"
            ));
        }
        Ok(())
    })
    .map_err(|e| format!("pod subnets: {e}"))?;
    check_ranges(&doc.service_subnets, |net| {
        let length = i64::from(net.max_prefix_len());
        if length - i64::from(net.prefix_len()) > SERVICE_MAX_HOST_BITS {
            return Err(format!(
                "invalid subnet: {net} is too large, it must be at least /{} (at most \
                 {SERVICE_MAX_HOST_BITS} host identifier bits)",
                length - SERVICE_MAX_HOST_BITS
            ));
        }
        Ok(())
    })
    .map_err(|e| format!("service subnets: {e}"))?;
    if doc.pod_subnets.len() != doc.service_subnets.len() {
        return Err("the number of pod subnets must match the number of service subnets".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(pods: &[&str], services: &[&str], mask: i64) -> KubeNetwork {
        KubeNetwork {
            pod_subnets: pods.iter().map(|s| s.to_string()).collect(),
            service_subnets: services.iter().map(|s| s.to_string()).collect(),
            node_cidr_mask_size_ipv4: Some(mask),
            node_cidr_mask_size_ipv6: None,
        }
    }

    #[test]
    fn pod_and_service_ranges_fit_the_per_node_range_size() {
        let ok = |pods: &[&str], services: &[&str], mask| {
            check_kube_network(&network(pods, services, mask))
        };
        assert_eq!(ok(&["10.244.0.0/16"], &["10.96.0.0/12"], 0), Ok(()));
        assert_eq!(
            ok(
                &["10.244.0.0/16", "fd00:10:244::/56"],
                &["10.96.0.0/12", "fd00:10:96::/112"],
                24
            ),
            Ok(())
        );
        let refused = [
            (
                ok(&["10.244.0.0/25"], &["10.96.0.0/12"], 0),
                "pod subnets: invalid subnet: 10.244.0.0/25 is smaller than the per-node pod \
                 CIDR mask size /24",
            ),
            (
                ok(&["10.0.0.0/8"], &["10.96.0.0/12"], 26),
                "pod subnets: invalid subnet: 10.0.0.0/8 is too large for the per-node pod CIDR \
                 mask size /26, the difference must be at most 16 bits",
            ),
            (
                ok(&["10.244.0.0/16"], &["10.96.0.0/11"], 24),
                "service subnets: invalid subnet: 10.96.0.0/11 is too large, it must be at least \
                 /12 (at most 20 host identifier bits)",
            ),
            (
                ok(&["10.244.0.1/16"], &["10.96.0.0/12"], 24),
                "pod subnets: invalid subnet: 10.244.0.1/16 is not a valid CIDR",
            ),
            (
                ok(&["10.244.0.0/16"], &["10.96.0.0/29"], 24),
                "service subnets: invalid subnet: /29 is too small, it must be larger than /25",
            ),
            (
                ok(&[], &["10.96.0.0/12"], 24),
                "pod subnets: at least one subnet must be specified",
            ),
            (
                ok(
                    &["10.244.0.0/16", "10.245.0.0/16"],
                    &["10.96.0.0/12", "10.97.0.0/16"],
                    24,
                ),
                "pod subnets: at most one IPv4 and one IPv6 subnet can be specified for \
                 dual-stack clusters",
            ),
            (
                ok(&["10.244.0.0/16"], &["10.96.0.0/12"], 33),
                "nodeCIDRMaskSizeIPv4 must be between 1 and 32",
            ),
        ];
        for (result, expected) in refused {
            assert_eq!(result, Err(expected.to_string()));
        }
    }
}
