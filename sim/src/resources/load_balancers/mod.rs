//! Load Balancers: TCP services forwarded to targets, reachable on a
//! public interface (which hct-sim never serves: it sends no traffic to
//! public addresses) and on a private network at one IP. This file holds the
//! records only; the rest is in the file named after it:
//!
//! - `create`: creating, renaming or relabelling, deleting;
//! - `network`: attaching to a network at an IP, detaching, the public
//!   interface on and off;
//! - `targets`: label-selector and server targets, services and their
//!   health checks, and the servers a target stands for;
//! - `view`: the load balancer as the API shows it, health included.
//!
//! Health comes from the emulated nodes: a target is healthy for a service
//! when its server runs and something answers on the health check's port
//! (the SOCKS5 proxy's registry of loopback services), which the caller
//! hands in as a `Listening` set because the world does not own it.

mod create;
mod network;
mod targets;
#[cfg(test)]
mod tests;
mod view;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};

pub use self::view::health_of;

/// The servers' ports that answer now: (server, port).
pub type Listening = BTreeSet<(Id, u16)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    RoundRobin,
    LeastConnections,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// Only `tcp` is emulated (an HTTP check is refused at the request).
    pub port: u16,
    pub interval: u32,
    pub timeout: u32,
    pub retries: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    /// Only `tcp` services are emulated.
    pub listen_port: u16,
    pub destination_port: u16,
    pub proxyprotocol: bool,
    pub health_check: HealthCheck,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TargetKind {
    Server { server: Id },
    LabelSelector { selector: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub kind: TargetKind,
    pub use_private_ip: bool,
}

/// Where the load balancer is on a private network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancerNet {
    pub network: Id,
    pub ip: Ipv4Addr,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadBalancer {
    pub id: Id,
    pub name: String,
    pub labels: Labels,
    pub created: Timestamp,
    pub load_balancer_type: String,
    pub location: String,
    pub algorithm: Algorithm,
    pub public_enabled: bool,
    /// The public addresses it has (kept while the interface is off).
    pub public_ipv4: String,
    pub public_ipv6: String,
    pub private_net: Vec<LoadBalancerNet>,
    pub services: Vec<Service>,
    pub targets: Vec<Target>,
    pub delete_protected: bool,
}

/// A service as a request gives it, before checking.
#[derive(Debug, Clone, Default)]
pub struct ServiceSpec {
    pub protocol: String,
    pub listen_port: Option<i64>,
    pub destination_port: Option<i64>,
    pub proxyprotocol: bool,
    pub health_check: Option<HealthCheckSpec>,
}

#[derive(Debug, Clone, Default)]
pub struct HealthCheckSpec {
    pub protocol: String,
    pub port: Option<i64>,
    pub interval: Option<i64>,
    pub timeout: Option<i64>,
    pub retries: Option<i64>,
}

/// A target as a request gives it, before checking.
#[derive(Debug, Clone, Default)]
pub struct TargetSpec {
    pub kind: String,
    pub server: Option<Id>,
    pub selector: Option<String>,
    pub use_private_ip: bool,
}

/// `POST /load_balancers`, before checking.
#[derive(Debug, Clone, Default)]
pub struct LoadBalancerSpec {
    pub name: String,
    pub load_balancer_type: String,
    pub location: Option<String>,
    pub network_zone: Option<String>,
    pub algorithm: Option<String>,
    pub public_interface: Option<bool>,
    pub network: Option<Id>,
    pub labels: Labels,
    pub services: Vec<ServiceSpec>,
    pub targets: Vec<TargetSpec>,
}

impl LoadBalancer {
    pub fn private_ip_in(&self, network: Id) -> Option<Ipv4Addr> {
        self.private_net
            .iter()
            .find(|p| p.network == network)
            .map(|p| p.ip)
    }

    pub fn service(&self, listen_port: u16) -> Option<&Service> {
        self.services.iter().find(|s| s.listen_port == listen_port)
    }
}

impl Sortable for LoadBalancer {
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
