//! Handing out public addresses: the lowest free IPv4 address of the
//! documentation ranges, the lowest free /64 of 2001:db8::/32; and finding
//! a Primary IP by its address (`?ip=`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::{IpType, PrimaryIp};
use crate::errors::ApiError;
use crate::state::World;

/// RFC 5737's TEST-NET-3, -2 and -1, in the order they are used.
const IPV4_RANGES: [[u8; 3]; 3] = [[203, 0, 113], [198, 51, 100], [192, 0, 2]];

impl World {
    fn address_taken(&self, ip: &str) -> bool {
        self.primary_ips.values().any(|p| p.ip == ip)
            || self.servers.values().any(|s| {
                [&s.public_ipv4, &s.public_ipv6]
                    .into_iter()
                    .flatten()
                    .any(|p| p.ip == ip)
            })
            || self
                .load_balancers
                .values()
                .any(|lb| lb.public_ipv4 == ip || lb.public_ipv6 == ip)
    }

    /// A free public address of `kind`.
    pub(crate) fn free_public_address(&self, kind: IpType) -> Result<String, ApiError> {
        let found = match kind {
            IpType::Ipv4 => IPV4_RANGES
                .iter()
                .flat_map(|[a, b, c]| (1..=254).map(move |d| Ipv4Addr::new(*a, *b, *c, d)))
                .map(|ip| ip.to_string())
                .find(|ip| !self.address_taken(ip)),
            IpType::Ipv6 => (1..=u16::MAX)
                .map(|n| format!("{}/64", Ipv6Addr::new(0x2001, 0xdb8, n, 0, 0, 0, 0, 0)))
                .find(|ip| !self.address_taken(ip)),
        };
        found.ok_or_else(|| {
            ApiError::operation(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "resource_unavailable",
                format!("no {} address is available", kind.as_str()),
            )
        })
    }
}

impl PrimaryIp {
    /// Whether `?ip=` names this Primary IP: its address, in any spelling;
    /// for an IPv6 /64, the network's address (`2001:db8:1::`) or the
    /// network itself (`2001:db8:1::/64`).
    pub fn has_address(&self, wanted: &str) -> bool {
        let own: Option<IpNet> = self
            .ip
            .parse()
            .ok()
            .or_else(|| self.ip.parse::<IpAddr>().ok().map(IpNet::from));
        let Some(own) = own else {
            return self.ip == wanted;
        };
        match (wanted.parse::<IpAddr>(), wanted.parse::<IpNet>()) {
            (Ok(addr), _) => addr == own.addr(),
            (_, Ok(net)) => net == own,
            _ => false,
        }
    }
}
