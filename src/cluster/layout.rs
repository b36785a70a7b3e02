//! Which nodes a group should have: node n (from 1) is named
//! `<cluster>-<group>-<n>`, has the plan's n-th IP of the group's CIDR and
//! sits in spread placement group ⌈n / 10⌉ (Hetzner's limit per group).

use std::net::Ipv4Addr;

use super::naming;
use crate::network_plan::NodeGroup;

/// Servers per spread placement group, Hetzner's maximum.
pub const PLACEMENT_GROUP_SIZE: u32 = 10;

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
pub fn slots(cluster: &str, group: &str, plan: &NodeGroup) -> Vec<NodeSlot> {
    plan.ips
        .iter()
        .zip(1..)
        .map(|(ip, index)| NodeSlot {
            name: naming::server_name(cluster, group, index),
            ip: *ip,
            index,
            placement_group: (index - 1) / PLACEMENT_GROUP_SIZE + 1,
        })
        .collect()
}

/// How many placement groups `nodes` servers need.
pub fn placement_groups_for(nodes: u32) -> u32 {
    nodes.div_ceil(PLACEMENT_GROUP_SIZE)
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
        let slots = slots("noreturn", "general", &group);
        assert_eq!(slots[0].name, "noreturn-general-1");
        assert_eq!(slots[0].ip, Ipv4Addr::new(10, 0, 128, 65));
        assert_eq!(slots[9].placement_group, 1);
        assert_eq!(slots[10].placement_group, 2);
        assert_eq!(placement_groups_for(10), 1);
        assert_eq!(placement_groups_for(11), 2);
        assert_eq!(placement_groups_for(0), 0);
    }
}
