//! Which addresses a node group hands out.
//!
//! Node `i` (0-based) gets host `i + 1` of its group's CIDR, exactly like
//! Terraform's `cidrhost(cidr, i + 1)`, so users can predict every IP. The
//! range's first (network) and last (broadcast) addresses are never assigned.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::cidr;

/// The address of node `index` (0-based), if the range reaches that far.
pub(crate) fn node_ip(group: Ipv4Net, index: u32) -> Option<Ipv4Addr> {
    let host = index.checked_add(1)?;
    // The broadcast address is the range's last one; it is never a node's.
    if u64::from(host) + 1 >= cidr::address_count(group.prefix_len()) {
        return None;
    }
    cidr::host(group, host)
}

/// The addresses of all `nodes` nodes, or `None` if the range is too small.
pub(crate) fn node_ips(group: Ipv4Net, nodes: u32) -> Option<Vec<Ipv4Addr>> {
    (0..nodes).map(|index| node_ip(group, index)).collect()
}

/// Which node (0-based) of a group of `nodes` would be assigned `addr`.
pub(crate) fn node_assigned(group: Ipv4Net, nodes: u32, addr: Ipv4Addr) -> Option<u32> {
    let host = cidr::offset_of(group, addr)?;
    (host >= 1 && host <= nodes).then(|| host - 1)
}

/// How many nodes a range holds: all addresses but the first and last.
pub(crate) fn capacity(prefix_len: u8) -> u64 {
    cidr::address_count(prefix_len).saturating_sub(2)
}

/// The longest prefix whose ranges hold `nodes` nodes (30 -> /27).
pub(crate) fn prefix_holding(nodes: u32) -> Option<u8> {
    (0..=32u8)
        .rev()
        .find(|&prefix| capacity(prefix) >= u64::from(nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> Ipv4Net {
        text.parse().expect("test CIDR")
    }

    fn ip(text: &str) -> Ipv4Addr {
        text.parse().expect("test address")
    }

    #[test]
    fn nodes_get_hosts_from_one() {
        let ips = node_ips(net("10.0.128.16/28"), 3);
        assert_eq!(
            ips,
            Some(vec![
                ip("10.0.128.17"),
                ip("10.0.128.18"),
                ip("10.0.128.19")
            ])
        );
    }

    #[test]
    fn broadcast_is_never_assigned() {
        assert_eq!(node_ip(net("10.0.128.16/28"), 13), Some(ip("10.0.128.30")));
        assert_eq!(node_ip(net("10.0.128.16/28"), 14), None);
        assert_eq!(node_ips(net("10.0.128.16/28"), 15), None);
        assert_eq!(node_ip(net("10.0.0.0/31"), 0), None);
        assert_eq!(node_ip(net("10.0.0.1/32"), 0), None);
    }

    #[test]
    fn capacity_excludes_network_and_broadcast() {
        let cases = [(28, 14), (27, 30), (24, 254), (31, 0), (32, 0)];
        for (prefix, nodes) in cases {
            assert_eq!(capacity(prefix), nodes, "/{prefix}");
        }
    }

    #[test]
    fn prefix_holding_is_the_smallest_fitting_range() {
        let cases = [
            (0, Some(32)),
            (1, Some(30)),
            (14, Some(28)),
            (15, Some(27)),
            (30, Some(27)),
            (31, Some(26)),
            (u32::MAX, None),
        ];
        for (nodes, prefix) in cases {
            assert_eq!(prefix_holding(nodes), prefix, "{nodes} nodes");
        }
    }

    #[test]
    fn node_assigned_finds_the_node() {
        let group = net("10.0.0.0/28");
        assert_eq!(node_assigned(group, 3, ip("10.0.0.1")), Some(0));
        assert_eq!(node_assigned(group, 3, ip("10.0.0.3")), Some(2));
        assert_eq!(node_assigned(group, 3, ip("10.0.0.4")), None);
        assert_eq!(node_assigned(group, 3, ip("10.0.0.0")), None);
        assert_eq!(node_assigned(group, 3, ip("10.0.1.1")), None);
    }
}
