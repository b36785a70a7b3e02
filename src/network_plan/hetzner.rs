//! Hetzner Cloud's rules for private networks that the plan must respect.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::cidr;

/// Hetzner attaches at most this many servers to one network.
pub const MAX_SERVERS_PER_NETWORK: u32 = 100;

/// A spread placement group holds at most this many servers.
pub const MAX_SERVERS_PER_PLACEMENT_GROUP: u32 = 10;

/// Hetzner's smallest network is a /24.
pub(crate) const LONGEST_NETWORK_PREFIX: u8 = 24;

/// The MTU of a server's private-network interface. Hetzner documents 1450
/// for private interfaces (1500 on public ones; "Networks: technical
/// concepts / architecture"); hct sets it rather than leave it to DHCP.
pub const PRIVATE_NETWORK_MTU: u16 = 1450;

/// Hetzner's metadata service, on every server: it answers any process there
/// without authentication, pods included (their traffic leaves as the node's).
pub const HETZNER_METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);

/// The gateway of every server's public interface. Hetzner refuses routes
/// that cover it, so the pod CIDR (carried by routes) must not.
pub(crate) const PUBLIC_GATEWAY: Ipv4Addr = Ipv4Addr::new(172, 31, 1, 1);

/// The network's gateway: its first host (10.0.0.0/16 -> 10.0.0.1).
///
/// Hetzner routes all private traffic through it, so private-only nodes need
/// their default route via this address, and no node may be assigned it.
pub(crate) fn gateway(network: Ipv4Net) -> Option<Ipv4Addr> {
    cidr::host(network, 1)
}

/// RFC 1918 ranges: the only ones Hetzner accepts for networks and for route
/// destinations.
pub(crate) fn is_private(net: Ipv4Net) -> bool {
    const PRIVATE: [(Ipv4Addr, u8); 3] = [
        (Ipv4Addr::new(10, 0, 0, 0), 8),
        (Ipv4Addr::new(172, 16, 0, 0), 12),
        (Ipv4Addr::new(192, 168, 0, 0), 16),
    ];
    PRIVATE.iter().any(|&(addr, prefix)| {
        Ipv4Net::new(addr, prefix).is_ok_and(|range| cidr::covers(range, net))
    })
}

/// Spread placement groups needed for `nodes` servers.
pub fn placement_groups_for(nodes: u32) -> u32 {
    nodes.div_ceil(MAX_SERVERS_PER_PLACEMENT_GROUP)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> Ipv4Net {
        text.parse().expect("test CIDR")
    }

    #[test]
    fn gateway_is_first_host() {
        assert_eq!(
            gateway(net("10.0.0.0/16")),
            Some(Ipv4Addr::new(10, 0, 0, 1))
        );
        assert_eq!(
            gateway(net("192.168.4.0/24")),
            Some(Ipv4Addr::new(192, 168, 4, 1))
        );
    }

    #[test]
    fn private_ranges() {
        assert!(is_private(net("10.0.0.0/8")));
        assert!(is_private(net("172.20.0.0/16")));
        assert!(is_private(net("192.168.0.0/24")));
        assert!(!is_private(net("172.0.0.0/8")));
        assert!(!is_private(net("100.64.0.0/10")));
        assert!(!is_private(net("0.0.0.0/0")));
    }

    #[test]
    fn placement_groups_round_up() {
        let cases = [(0, 0), (1, 1), (10, 1), (11, 2), (100, 10)];
        for (nodes, groups) in cases {
            assert_eq!(placement_groups_for(nodes), groups, "{nodes} nodes");
        }
    }
}
