//! Load Balancers: services forwarded to targets, reachable on a public
//! interface (which hct-sim never serves: it sends no traffic to public
//! addresses) and on a private network at one IP. TCP services carry
//! connections there; HTTP and HTTPS services are the API's objects, with
//! their options and checks, carried as TCP. This file holds the records
//! only; the rest is in the file named after it:
//!
//! - `create`: creating, renaming or relabelling, deleting;
//! - `change`: the type and the algorithm;
//! - `network`: attaching to a network at an IP, detaching, the public
//!   interface on and off;
//! - `services`: services, their `http` options and health checks;
//! - `targets`: label-selector and server targets, and the servers a
//!   target stands for;
//! - `view`: the load balancer as the API shows it, health included.
//!
//! Health comes from the emulated nodes: a target is healthy for a service
//! when its server runs and something answers on the health check's port
//! (the SOCKS5 proxy's registry of loopback services), which the caller
//! hands in as a `Listening` set because the world does not own it.

mod change;
mod create;
mod network;
mod services;
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

/// A service's protocol, or a health check's (`tcp` or `http`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    #[default]
    Tcp,
    Http,
    Https,
}

/// What an HTTP health check asks and accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheckHttp {
    /// The Host header; none is sent without one.
    pub domain: Option<String>,
    pub path: String,
    /// Text the answer must contain (empty: any).
    pub response: String,
    pub status_codes: Vec<String>,
    pub tls: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// `tcp` or `http`; either is healthy when the port answers.
    #[serde(default)]
    pub protocol: Protocol,
    pub port: u16,
    pub interval: u32,
    pub timeout: u32,
    pub retries: u32,
    /// For `http` checks.
    #[serde(default)]
    pub http: Option<HealthCheckHttp>,
}

/// The options of an HTTP or HTTPS service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceHttp {
    pub cookie_name: String,
    /// Seconds.
    pub cookie_lifetime: u32,
    pub certificates: Vec<Id>,
    pub redirect_http: bool,
    pub sticky_sessions: bool,
    /// Seconds.
    pub timeout_idle: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    #[serde(default)]
    pub protocol: Protocol,
    pub listen_port: u16,
    pub destination_port: u16,
    pub proxyprotocol: bool,
    /// For `http` and `https` services.
    #[serde(default)]
    pub http: Option<ServiceHttp>,
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

/// A service as a request gives it, before checking: on `add_service`
/// the protocol is required, on `update_service` each field given
/// replaces the service's.
#[derive(Debug, Clone, Default)]
pub struct ServiceSpec {
    pub protocol: Option<String>,
    pub listen_port: Option<i64>,
    pub destination_port: Option<i64>,
    pub proxyprotocol: Option<bool>,
    pub http: Option<ServiceHttpSpec>,
    pub health_check: Option<HealthCheckSpec>,
}

#[derive(Debug, Clone, Default)]
pub struct ServiceHttpSpec {
    pub cookie_name: Option<String>,
    pub cookie_lifetime: Option<i64>,
    pub certificates: Option<Vec<Id>>,
    pub redirect_http: Option<bool>,
    pub sticky_sessions: Option<bool>,
    pub timeout_idle: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct HealthCheckSpec {
    pub protocol: Option<String>,
    pub port: Option<i64>,
    pub interval: Option<i64>,
    pub timeout: Option<i64>,
    pub retries: Option<i64>,
    pub http: Option<HealthCheckHttpSpec>,
}

#[derive(Debug, Clone, Default)]
pub struct HealthCheckHttpSpec {
    pub domain: Option<String>,
    pub path: Option<String>,
    pub response: Option<String>,
    pub status_codes: Option<Vec<String>>,
    pub tls: Option<bool>,
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
