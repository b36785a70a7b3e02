//! The API's objects, as far as hct reads them. Unknown fields are ignored
//! and most fields default, so additions on Hetzner's side do not break us.

use std::collections::BTreeMap;

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct Action {
    pub id: i64,
    pub command: String,
    /// `running`, `success` or `error`.
    pub status: String,
    pub progress: i64,
    pub started: Option<String>,
    pub finished: Option<String>,
    pub resources: Vec<ActionResource>,
    pub error: Option<ActionError>,
}

impl Action {
    pub fn is_running(&self) -> bool {
        self.status == "running"
    }
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct ActionResource {
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct ActionError {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct Server {
    pub id: i64,
    pub name: String,
    /// `initializing`, `starting`, `running`, `stopping`, `off`, `deleting`, …
    pub status: String,
    pub created: String,
    pub public_net: PublicNet,
    pub private_net: Vec<PrivateNet>,
    pub server_type: ServerType,
    pub location: Option<Location>,
    pub image: Option<Image>,
    pub labels: Labels,
    pub placement_group: Option<PlacementGroup>,
    pub rescue_enabled: bool,
    pub locked: bool,
    /// GB; may be bigger than the type's own disk after a resize with
    /// `upgrade_disk`, and then no smaller type fits.
    pub primary_disk_size: i64,
}

impl Server {
    /// The server's IP in `network`, if it is attached there.
    pub fn private_ip(&self, network: i64) -> Option<Ipv4Addr> {
        self.private_net
            .iter()
            .find(|n| n.network == network)
            .and_then(|n| n.ip.parse().ok())
    }
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct PublicNet {
    pub ipv4: Option<PublicIp>,
    pub ipv6: Option<PublicIp>,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct PublicIp {
    pub ip: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct PrivateNet {
    pub network: i64,
    pub ip: String,
    pub alias_ips: Vec<String>,
    pub mac_address: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct Network {
    pub id: i64,
    pub name: String,
    pub ip_range: String,
    pub subnets: Vec<Subnet>,
    pub routes: Vec<Route>,
    pub servers: Vec<i64>,
    pub labels: Labels,
}

#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(default)]
pub struct Subnet {
    #[serde(rename = "type")]
    pub kind: String,
    pub ip_range: String,
    pub network_zone: String,
    pub gateway: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(default)]
pub struct Route {
    pub destination: String,
    pub gateway: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct PlacementGroup {
    pub id: i64,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub servers: Vec<i64>,
    pub labels: Labels,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct Image {
    pub id: i64,
    /// `system`, `snapshot`, `backup`, `app`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `available`, `creating`, `unavailable`.
    pub status: String,
    pub name: Option<String>,
    pub description: String,
    pub architecture: String,
    pub image_size: Option<f64>,
    pub disk_size: f64,
    pub created: String,
    pub labels: Labels,
    /// The server a snapshot was made from.
    pub created_from: Option<CreatedFrom>,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct CreatedFrom {
    pub id: i64,
    pub name: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct SshKey {
    pub id: i64,
    pub name: String,
    pub fingerprint: String,
    pub public_key: String,
    pub labels: Labels,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct ServerType {
    pub id: i64,
    pub name: String,
    pub architecture: String,
    pub cores: i64,
    pub memory: f64,
    pub disk: i64,
    /// Per-location availability and deprecation.
    pub locations: Vec<ServerTypeLocation>,
    pub deprecation: Option<Deprecation>,
}

impl ServerType {
    /// Whether the type can be ordered in `location`, and its deprecation there.
    pub fn offer_in(&self, location: &str) -> Option<&ServerTypeLocation> {
        self.locations.iter().find(|l| l.name == location)
    }
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct ServerTypeLocation {
    pub id: i64,
    pub name: String,
    pub deprecation: Option<Deprecation>,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct Deprecation {
    pub announced: String,
    pub unavailable_after: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct Location {
    pub id: i64,
    pub name: String,
    pub network_zone: String,
    pub country: String,
    pub city: String,
}

/// `meta.pagination` of list answers.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct Pagination {
    pub page: i64,
    pub per_page: i64,
    pub next_page: Option<i64>,
    pub last_page: Option<i64>,
    pub total_entries: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancer {
    pub id: i64,
    pub name: String,
    pub labels: Labels,
    pub location: Option<Location>,
    pub public_net: LoadBalancerPublicNet,
    pub private_net: Vec<LoadBalancerPrivateNet>,
    pub services: Vec<LoadBalancerService>,
    pub targets: Vec<LoadBalancerTarget>,
}

impl LoadBalancer {
    pub fn private_ip(&self, network: i64) -> Option<Ipv4Addr> {
        self.private_net
            .iter()
            .find(|p| p.network == network)
            .and_then(|p| p.ip.parse().ok())
    }
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancerPublicNet {
    pub enabled: bool,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancerPrivateNet {
    pub network: i64,
    pub ip: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancerService {
    pub protocol: String,
    pub listen_port: u16,
    pub destination_port: u16,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancerTarget {
    /// `server`, `label_selector` or `ip`.
    #[serde(rename = "type")]
    pub kind: String,
    pub label_selector: Option<LabelSelectorTarget>,
    pub use_private_ip: bool,
    /// The servers a label selector stands for now.
    pub targets: Vec<LoadBalancerServerTarget>,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LabelSelectorTarget {
    pub selector: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancerServerTarget {
    pub server: Option<ServerRef>,
    pub health_status: Vec<TargetHealth>,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct ServerRef {
    pub id: i64,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct TargetHealth {
    pub listen_port: u16,
    /// `healthy`, `unhealthy` or `unknown`.
    pub status: String,
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancerType {
    pub id: i64,
    pub name: String,
    pub deprecated: Option<String>,
    pub prices: Vec<LoadBalancerTypePrice>,
}

impl LoadBalancerType {
    /// Whether the type is sold at `location` (it has a price there).
    pub fn sold_at(&self, location: &str) -> bool {
        self.prices.iter().any(|p| p.location == location)
    }
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct LoadBalancerTypePrice {
    pub location: String,
}
