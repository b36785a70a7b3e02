//! Addresses in a network: the servers attached to it, whether an IP is
//! taken, and the lowest free IP of a zone's subnets.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::ranges::overlaps;
use super::{Network, SubnetType};
use crate::ids::Id;
use crate::state::World;

impl World {
    /// Servers attached to `network`, by ID.
    pub fn network_members(&self, network: Id) -> Vec<Id> {
        self.servers
            .values()
            .filter(|s| s.private_net.iter().any(|p| p.network == network))
            .map(|s| s.id)
            .collect()
    }

    /// True when a server has `ip` in `network`, as main or alias IP, or
    /// a load balancer has it.
    pub fn ip_in_use(&self, network: Id, ip: Ipv4Addr) -> bool {
        self.servers.values().any(|s| {
            s.private_net
                .iter()
                .any(|p| p.network == network && (p.ip == ip || p.alias_ips.contains(&ip)))
        }) || self.load_balancer_has_ip(network, ip)
    }

    /// The lowest free address in a ready subnet of `zone`.
    pub fn free_ip(
        &self,
        network: &Network,
        zone: &str,
        within: Option<Ipv4Net>,
    ) -> Option<Ipv4Addr> {
        network
            .subnets
            .iter()
            .filter(|s| s.ready && s.network_zone == zone && s.kind != SubnetType::Vswitch)
            .filter(|s| within.is_none_or(|w| overlaps(w, s.ip_range)))
            .flat_map(|s| s.ip_range.hosts())
            .filter(|ip| within.is_none_or(|w| w.contains(ip)))
            .find(|ip| !network.is_reserved(*ip) && !self.ip_in_use(network.id, *ip))
    }
}
