//! Which nodes a group should have: node n (from 1) is named
//! `<cluster>-<group>-<n>`, has the plan's n-th IP of the group's CIDR and
//! sits in spread placement group ⌈n / 10⌉ (Hetzner's limit per group).

use std::net::Ipv4Addr;

use super::naming;
pub use crate::network_plan::placement_groups_for;
use crate::network_plan::{MAX_SERVERS_PER_PLACEMENT_GROUP, NodeGroup};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSlot {
    pub name: String,
    pub ip: Ipv4Addr,
    /// Counted from 1.
    pub index: u32,
    /// The placement group it belongs to, counted from 1.
    pub placement_group: u32,
}

/// The nodes of `group` (`cp` or a pool name) as the plan lays them out.
pub fn of(cluster: &str, group: &str, plan: &NodeGroup) -> Vec<NodeSlot> {
    plan.ips
        .iter()
        .zip(1..)
        .map(|(ip, index)| NodeSlot {
            name: naming::server_name(cluster, group, index),
            ip: *ip,
            index,
            placement_group: (index - 1) / MAX_SERVERS_PER_PLACEMENT_GROUP + 1,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_n_has_the_nth_ip_and_groups_hold_ten() {
        let group = NodeGroup {
            cidr: "10.0.128.64/27".parse().unwrap(),
            nodes: 12,
            ips: (1..=12)
                .map(|i| Ipv4Addr::new(10, 0, 128, 64 + i))
                .collect(),
            placement_groups: 2,
        };
        let slots = of("noreturn", "general", &group);
        assert_eq!(slots[0].name, "noreturn-general-1");
        assert_eq!(slots[0].ip, Ipv4Addr::new(10, 0, 128, 65));
        assert_eq!(slots[9].placement_group, 1);
        assert_eq!(slots[10].placement_group, 2);
        assert_eq!(placement_groups_for(10), 1);
        assert_eq!(placement_groups_for(11), 2);
        assert_eq!(placement_groups_for(0), 0);
    }
}
