//! Servers: the record of a server and the shapes of the requests about it.
//! This file holds data only; what each request and each finished action
//! does is in the file named after it:
//!
//! - `create`: creating a server, renaming or relabelling it, deleting it;
//! - `power`: powering on and off, shutdown, reset and reboot, and what a
//!   finished boot (into the disk or the rescue system) or stop does;
//! - `rescue`: enabling and disabling the rescue system for the next boot;
//! - `snapshot`: snapshots of the disk (`create_image`);
//! - `change_type`: moving a stopped server to another server type;
//! - `attachments`: networks (IPs and alias IPs) and placement groups;
//! - `view`: the server as the API shows it.
//!
//! Keeping the operations (`impl World`) out of this file lets the modules
//! that only read servers (events, faults, the Talos and rescue emulation)
//! use the record without depending on the world.

mod attachments;

pub use attachments::mac_address;
mod change_type;
mod create;
mod media;
mod power;
mod rescue;
mod snapshot;
#[cfg(test)]
mod tests;
mod view;

use std::iter;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::catalog::{self, ServerType};
use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};
use crate::rescue::session::{DiskImage, RescueSession};
use crate::talos::node::NodeState;

/// The API's limit on `user_data`.
pub const USER_DATA_LIMIT: usize = 32 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    Initializing,
    Starting,
    Running,
    Stopping,
    Off,
    Deleting,
    Migrating,
    Rebuilding,
    Unknown,
}

impl ServerStatus {
    pub const ALL: [ServerStatus; 9] = [
        Self::Initializing,
        Self::Starting,
        Self::Running,
        Self::Stopping,
        Self::Off,
        Self::Deleting,
        Self::Migrating,
        Self::Rebuilding,
        Self::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initializing => "initializing",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Stopping => "stopping",
            Self::Off => "off",
            Self::Deleting => "deleting",
            Self::Migrating => "migrating",
            Self::Rebuilding => "rebuilding",
            Self::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// What a server booted into last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BootTarget {
    Disk,
    Rescue,
}

/// The slot for an emulated Talos node: filled when a server is created
/// from an image whose disk holds Talos (`Image::content`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TalosNode {
    pub image: Id,
    /// The Talos release it runs, e.g. `v1.12.6`: the release its disk
    /// held when it was created, until an install or upgrade changes it.
    pub version: String,
    pub arch: Option<String>,
    pub schematic: Option<String>,
    /// Boots from disk so far.
    pub boots: u32,
    pub last_booted: Option<Timestamp>,
    /// The emulated Talos on it (see `crate::talos`).
    #[serde(flatten)]
    pub node: Box<NodeState>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateNet {
    pub network: Id,
    pub ip: Ipv4Addr,
    pub alias_ips: Vec<Ipv4Addr>,
    pub mac_address: String,
}

impl PrivateNet {
    /// Whether `ip` is this attachment's address or one of its aliases.
    pub fn has(&self, ip: Ipv4Addr) -> bool {
        self.ip == ip || self.alias_ips.contains(&ip)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicIp {
    pub id: Id,
    pub ip: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Server {
    pub id: Id,
    pub name: String,
    pub status: ServerStatus,
    pub created: Timestamp,
    pub server_type: String,
    pub location: String,
    pub image: Option<Id>,
    pub primary_disk_size: u32,
    pub public_ipv4: Option<PublicIp>,
    pub public_ipv6: Option<PublicIp>,
    pub private_net: Vec<PrivateNet>,
    pub placement_group: Option<Id>,
    pub labels: Labels,
    pub rescue_enabled: bool,
    pub user_data: Option<String>,
    pub ssh_keys: Vec<Id>,
    pub delete_protected: bool,
    pub rebuild_protected: bool,
    pub boot: Option<BootTarget>,
    pub talos: Option<TalosNode>,
    /// OpenSSH public keys the next boot into rescue lets in (given to
    /// `enable_rescue`).
    #[serde(default)]
    pub rescue_keys: Vec<String>,
    /// The rescue system, while the server runs it.
    #[serde(default)]
    pub rescue: Option<RescueSession>,
    /// The Talos image the disk holds: the one the server was created from
    /// (its image's `content`), or the one a rescue system wrote since.
    #[serde(default)]
    pub disk: Option<DiskImage>,
    /// The ISO in the server's virtual drive (`attach_iso`), by ID.
    #[serde(default)]
    pub iso: Option<i64>,
    /// When backups run, once `enable_backup` turned them on (e.g. `22-02`).
    #[serde(default)]
    pub backup_window: Option<String>,
}

/// A server as requested by `POST /servers`; references are IDs or names.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub name: String,
    pub server_type: String,
    pub image: String,
    pub location: Option<String>,
    pub ssh_keys: Vec<String>,
    pub networks: Vec<Id>,
    pub placement_group: Option<Id>,
    /// Firewalls to apply once the server exists.
    pub firewalls: Vec<Id>,
    pub labels: Labels,
    pub user_data: Option<String>,
    pub start_after_create: bool,
    pub enable_ipv4: bool,
    pub enable_ipv6: bool,
    /// Primary IPs to use (`public_net.ipv4`, `public_net.ipv6`).
    pub primary_ipv4: Option<Id>,
    pub primary_ipv6: Option<Id>,
}

impl ServerSpec {
    pub fn new(name: &str, server_type: &str, image: &str) -> Self {
        Self {
            name: name.into(),
            server_type: server_type.into(),
            image: image.into(),
            location: None,
            ssh_keys: Vec::new(),
            networks: Vec::new(),
            placement_group: None,
            firewalls: Vec::new(),
            labels: Labels::new(),
            user_data: None,
            start_after_create: true,
            enable_ipv4: true,
            enable_ipv6: true,
            primary_ipv4: None,
            primary_ipv6: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct CreatedServer {
    pub server: Id,
    pub action: Id,
    pub next_actions: Vec<Id>,
    pub root_password: Option<String>,
}

/// How `attach_to_network` should pick the server's IP.
#[derive(Debug, Clone, Default)]
pub struct Attachment {
    pub ip: Option<String>,
    pub alias_ips: Vec<String>,
    pub ip_range: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    On,
    Off,
    Shutdown,
    Reset,
    Reboot,
}

impl Server {
    pub fn server_type(&self) -> Option<&'static ServerType> {
        catalog::server_type(&self.server_type)
    }

    pub fn network_zone(&self) -> &'static str {
        catalog::location(&self.location).map_or("eu-central", |l| l.network_zone)
    }

    /// The server's private addresses (primary and alias IPs of every network).
    pub fn private_ips(&self) -> Vec<Ipv4Addr> {
        self.private_net
            .iter()
            .flat_map(|p| iter::once(p.ip).chain(p.alias_ips.iter().copied()))
            .collect()
    }
}

impl Sortable for Server {
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

/// RFC 1123 host name, as the API requires of server names.
pub fn is_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn random_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..20)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}
