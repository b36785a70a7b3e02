//! Private networks: an RFC 1918 range, cloud subnets per network zone,
//! routes, and the servers attached to them (attaching is the server's
//! request, in `servers::attachments`). This file holds the records only;
//! the rest is in the file named after it:
//!
//! - `create`: creating a network, renaming or relabelling it, deleting it;
//! - `subnets`: checking, adding and deleting subnets, and what a finished
//!   or failed `add_subnet` does;
//! - `routes`: checking, adding and deleting routes, and undoing a failed
//!   `add_route`;
//! - `addresses`: the servers of a network, the IPs in use, free IPs;
//! - `ranges`: CIDRs as requests write them, and the ranges networks may use;
//! - `view`: the network as the API shows it.
//!
//! Keeping the operations (`impl World`) out of this file lets the world
//! hold networks without depending on what is done with them.

mod addresses;
mod create;
mod ranges;
mod routes;
mod subnets;
#[cfg(test)]
mod tests;
mod view;

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};

pub use self::ranges::parse_cidr;

/// Servers one network can hold.
pub const NETWORK_SERVER_LIMIT: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubnetType {
    Cloud,
    /// The old name of `cloud`, still accepted.
    Server,
    Vswitch,
}

impl SubnetType {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "cloud" => Some(Self::Cloud),
            "server" => Some(Self::Server),
            "vswitch" => Some(Self::Vswitch),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Cloud => "cloud",
            Self::Server => "server",
            Self::Vswitch => "vswitch",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subnet {
    pub kind: SubnetType,
    pub ip_range: Ipv4Net,
    pub network_zone: String,
    /// False while its `add_subnet` action runs: servers cannot get IPs there yet.
    pub ready: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub destination: Ipv4Net,
    pub gateway: Ipv4Addr,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Network {
    pub id: Id,
    pub name: String,
    pub ip_range: Ipv4Net,
    pub subnets: Vec<Subnet>,
    pub routes: Vec<Route>,
    pub labels: Labels,
    pub delete_protected: bool,
    pub expose_routes_to_vswitch: bool,
    pub created: Timestamp,
}

/// A subnet as requested, before it is checked.
#[derive(Debug, Clone, Default)]
pub struct SubnetSpec {
    pub kind: String,
    pub ip_range: Option<String>,
    pub network_zone: String,
}

/// A route as requested, before it is checked.
#[derive(Debug, Clone, Default)]
pub struct RouteSpec {
    pub destination: String,
    pub gateway: String,
}

impl Network {
    /// Hetzner's router in this network: the first host of the whole range,
    /// which is also every subnet's `gateway`.
    pub fn gateway(&self) -> Ipv4Addr {
        first_host(self.ip_range)
    }

    pub fn subnet_containing(&self, ip: Ipv4Addr) -> Option<&Subnet> {
        self.subnets.iter().find(|s| s.ip_range.contains(&ip))
    }

    /// Addresses no server can have: a subnet's network and broadcast
    /// addresses and the network's gateway.
    pub fn is_reserved(&self, ip: Ipv4Addr) -> bool {
        ip == self.gateway()
            || self
                .subnet_containing(ip)
                .is_some_and(|s| ip == s.ip_range.network() || ip == s.ip_range.broadcast())
    }
}

impl Sortable for Network {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "name" => SortKey::Text(self.name.clone()),
            "created" => SortKey::Int(self.created.millis() as i64),
            _ => SortKey::Int(self.id),
        }
    }
}

fn first_host(range: Ipv4Net) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(range.network()).saturating_add(1))
}
