//! Primary IPs: the public IPv4 address or IPv6 /64 of a server, as their
//! own records. A server created with a public interface and no Primary IP
//! given gets one per family (`auto_delete`: it goes with the server); a
//! Primary IP created on its own outlives the servers it is assigned to.
//! This file holds the records only; the rest is in the file named after
//! it:
//!
//! - `addresses`: handing out addresses from the documentation ranges;
//! - `create`: creating, renaming or relabelling, protecting and deleting;
//! - `assign`: assigning to and unassigning from powered-off servers, and
//!   what a server's creation and deletion do to its Primary IPs;
//! - `view`: the Primary IP as the API shows it.
//!
//! The addresses come from 203.0.113.0/24, 198.51.100.0/24, 192.0.2.0/24
//! and 2001:db8::/32 (RFC 5737, RFC 3849): nothing is ever sent to them.

mod addresses;
mod assign;
mod create;
#[cfg(test)]
mod tests;
mod view;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IpType {
    Ipv4,
    Ipv6,
}

impl IpType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ipv4 => "ipv4",
            Self::Ipv6 => "ipv6",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ipv4" => Some(Self::Ipv4),
            "ipv6" => Some(Self::Ipv6),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrimaryIp {
    pub id: Id,
    pub name: String,
    pub kind: IpType,
    /// An IPv4 address, or an IPv6 network such as `2001:db8:1::/64`.
    pub ip: String,
    pub location: String,
    pub assignee: Option<Id>,
    pub auto_delete: bool,
    pub labels: Labels,
    pub created: Timestamp,
    pub delete_protected: bool,
}

/// `POST /primary_ips` as requested.
#[derive(Debug, Clone)]
pub struct PrimaryIpSpec {
    pub name: String,
    pub kind: String,
    /// Needed with `assignee` only: Hetzner's clients leave it out otherwise.
    pub assignee_type: Option<String>,
    pub assignee: Option<Id>,
    pub location: Option<String>,
    pub datacenter: Option<String>,
    pub auto_delete: bool,
    pub labels: Labels,
}

impl Sortable for PrimaryIp {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "created" => SortKey::Int(self.created.millis() as i64),
            _ => SortKey::Int(self.id),
        }
    }
}
