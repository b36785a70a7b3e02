//! One real etcd member of a ring: its name, data directory, loopback
//! ports and the arguments etcd starts with (`etcd_ring` runs them,
//! `restore` makes a founder's data).

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::files::Layout;
use super::process::{self, free_ports};

/// The name of the real member standing for emulated member `id` of node
/// `hostname` (a node that joins again is a new member).
pub fn member_name(hostname: &str, id: u64) -> String {
    format!("{hostname}-{id:x}")
}

/// The hostname and emulated member id a real member's name stands for
/// ([`member_name`]'s inverse); None for another name (an empty one: a
/// member added and not started yet).
pub fn parse_member_name(name: &str) -> Option<(&str, u64)> {
    let (hostname, id) = name.rsplit_once('-')?;
    let id = u64::from_str_radix(id, 16).ok()?;
    (!hostname.is_empty()).then_some((hostname, id))
}

/// Where a member listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    pub client: u16,
    pub peer: u16,
}

impl Ports {
    /// Free ports, reserved for the member until it is removed.
    pub fn free() -> std::io::Result<Self> {
        let [client, peer] = free_ports()?;
        let ports = Self { client, peer };
        ports.reserve();
        Ok(ports)
    }

    pub fn reserve(&self) {
        process::reserve(&[self.client, self.peer]);
    }

    pub fn release(&self) {
        process::release(&[self.client, self.peer]);
    }
}

/// A member's name, data directory and ports.
#[derive(Debug, Clone)]
pub struct MemberFiles {
    pub name: String,
    pub data: PathBuf,
    pub ports: Ports,
}

impl MemberFiles {
    /// Member `name` of the ring whose directory is `layout`'s.
    pub fn of(layout: &Layout, name: &str, ports: Ports) -> Self {
        Self {
            name: name.to_string(),
            data: layout.path("etcd").join(name),
            ports,
        }
    }

    pub fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.peer)
    }

    pub fn client(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports.client))
    }

    /// `--initial-cluster` of a member that starts a cluster alone.
    pub fn alone(&self) -> String {
        format!("{}={}", self.name, self.peer_url())
    }

    pub fn has_data(&self) -> bool {
        std::fs::read_dir(&self.data).is_ok_and(|mut d| d.next().is_some())
    }

    /// etcd's arguments (Talos' own, but for the timing below):
    /// `initial_cluster` and whether it is `new` or `existing` count only
    /// while the data directory is empty.
    pub fn args(&self, initial_cluster: &str, state: &str) -> Vec<String> {
        let client = format!("http://{}", self.client());
        let peer = self.peer_url();
        vec![
            format!("--name={}", self.name),
            format!("--data-dir={}", self.data.display()),
            format!("--listen-client-urls={client}"),
            format!("--advertise-client-urls={client}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster={initial_cluster}"),
            format!("--initial-cluster-state={state}"),
            // Dozens of members share two cores in a test run: a heartbeat
            // late past etcd's 1 s default election timeout would start
            // elections no node would see. Slower to notice a stopped
            // leader (2.5 s), never more forgiving.
            "--heartbeat-interval=250".into(),
            "--election-timeout=2500".into(),
            "--log-level=warn".into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_members_name_gives_back_its_hostname_and_emulated_id() {
        let name = member_name("prod-cp-1", 0xbeef);
        assert_eq!(name, "prod-cp-1-beef");
        assert_eq!(parse_member_name(&name), Some(("prod-cp-1", 0xbeef)));
        for other in ["", "cp", "cp-", "-beef", "cp-xyz"] {
            assert_eq!(parse_member_name(other), None, "{other:?}");
        }
    }
}
