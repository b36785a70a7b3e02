//! What a node's config is made from, as the provider passes it, and the
//! checks that turn it into a [`Node`] the generators can trust.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;

use super::ConfigError;
use super::contract::{self, Contract};
use super::labels;
use crate::talos::release::{KubernetesVersion, TalosVersion};

/// The Talos release hct installs unless told otherwise.
pub const DEFAULT_TALOS_VERSION: &str = "v1.12.6";
/// The first disk of a Hetzner Cloud server.
pub const DEFAULT_INSTALL_DISK: &str = "/dev/sda";
/// The private network's interface on a server without public IPs. Talos'
/// hcloud platform boots with `net.ifnames=0` (legacy `ethN` names), and a
/// server with no public IPv4/IPv6 has the private network as its first and
/// only NIC, so it is `eth0`. (With public networks it would be `eth1`.)
pub const DEFAULT_PRIVATE_INTERFACE: &str = "eth0";

/// Which machine config a node gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    ControlPlane,
    Worker,
}

/// One node's settings; `None` takes the documented default. Debug output
/// leaves out the patches and manifests, which may carry credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeConfigInput {
    pub cluster_name: String,
    /// e.g. `v1.12.6`; its minor picks the config contract.
    pub talos_version: TalosVersion,
    /// e.g. `v1.35.2`; default: Talos' own default for the contract
    /// (v1.11 → v1.34.1, v1.12 → v1.35.2, v1.13 → v1.36.3).
    pub kubernetes_version: Option<KubernetesVersion>,
    /// Image Factory schematic id (64 hex digits) of the installed image.
    pub schematic_id: String,
    /// Default [`DEFAULT_INSTALL_DISK`].
    pub install_disk: Option<String>,
    /// The Hetzner server name; the node's hostname and Kubernetes node name.
    pub hostname: String,
    pub role: Role,
    pub node_labels: BTreeMap<String, String>,
    /// Talos' form: `key: "value:Effect"` or `key: "Effect"`.
    pub node_taints: BTreeMap<String, String>,
    /// Manifests Talos applies at bootstrap (name, multi-document YAML),
    /// control planes only: `cluster.inlineManifests`, or from Talos v1.14
    /// one `KubeInlineManifestConfig` document each.
    pub inline_manifests: Vec<(String, String)>,
    /// YAML strategic merge patches or JSON6902 patch lists, applied in
    /// order after hct's settings.
    pub config_patches: Vec<String>,
    /// Default [`DEFAULT_PRIVATE_INTERFACE`].
    pub interface: Option<String>,
    /// The node's own private IP in the plan. The address checks (kubelet's
    /// `validSubnets`, etcd's `advertisedSubnets`) look at it alone; without
    /// it, at every planned IP of the node's role.
    pub ip: Option<Ipv4Addr>,
}

impl fmt::Debug for NodeConfigInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeConfigInput")
            .field("cluster_name", &self.cluster_name)
            .field("talos_version", &self.talos_version)
            .field("kubernetes_version", &self.kubernetes_version)
            .field("schematic_id", &self.schematic_id)
            .field("install_disk", &self.install_disk)
            .field("hostname", &self.hostname)
            .field("role", &self.role)
            .field("node_labels", &self.node_labels)
            .field("node_taints", &self.node_taints)
            .field(
                "inline_manifests",
                &format_args!("<{} redacted>", self.inline_manifests.len()),
            )
            .field(
                "config_patches",
                &format_args!("<{} redacted>", self.config_patches.len()),
            )
            .field("interface", &self.interface)
            .field("ip", &self.ip)
            .finish()
    }
}

/// A checked input, with defaults applied.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub cluster_name: String,
    pub talos: TalosVersion,
    pub contract: Contract,
    pub kubernetes: KubernetesVersion,
    pub schematic_id: String,
    pub install_disk: String,
    pub hostname: String,
    pub role: Role,
    pub node_labels: BTreeMap<String, String>,
    pub node_taints: BTreeMap<String, String>,
    pub interface: String,
    pub ip: Option<Ipv4Addr>,
}

impl NodeConfigInput {
    pub(crate) fn check(&self) -> Result<Node, ConfigError> {
        let talos = self.talos_version.clone();
        let contract = Contract::of(&talos)?;
        let kubernetes = match &self.kubernetes_version {
            Some(version) => version.clone(),
            None => contract.default_kubernetes_version(),
        };
        contract::check_kubernetes_supported(&kubernetes, &talos)?;
        labels::check_labels(&self.node_labels)?;
        labels::check_taints(&self.node_taints)?;
        Ok(Node {
            cluster_name: check_cluster_name(&self.cluster_name)?,
            contract,
            talos,
            kubernetes,
            schematic_id: check_schematic_id(&self.schematic_id)?,
            install_disk: check_install_disk(self.install_disk.as_deref())?,
            hostname: check_hostname(&self.hostname)?,
            role: self.role,
            node_labels: self.node_labels.clone(),
            node_taints: self.node_taints.clone(),
            interface: check_interface(self.interface.as_deref())?,
            ip: self.ip,
        })
    }
}

/// Cluster names become talosconfig contexts and kubeconfig names.
pub(crate) fn is_cluster_name(name: &str) -> bool {
    labels::is_dns_label(name)
}

fn check_cluster_name(name: &str) -> Result<String, ConfigError> {
    if is_cluster_name(name) {
        Ok(name.to_owned())
    } else {
        Err(invalid(
            "cluster_name",
            format!("{name:?} must be 1-63 characters [a-z0-9-], starting and ending alphanumeric"),
        ))
    }
}

/// A SHA-256, as the Image Factory names schematics.
fn check_schematic_id(id: &str) -> Result<String, ConfigError> {
    if id.len() == 64
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(id.to_owned())
    } else {
        Err(invalid(
            "schematic_id",
            format!("{id:?} must be an Image Factory schematic id (64 lower-case hex digits)"),
        ))
    }
}

fn check_install_disk(disk: Option<&str>) -> Result<String, ConfigError> {
    let disk = disk.unwrap_or(DEFAULT_INSTALL_DISK);
    let device = disk.strip_prefix("/dev/").unwrap_or_default();
    let valid = !device.is_empty()
        && !device
            .split('/')
            .any(|part| part.is_empty() || part == "..")
        && device
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b':'));
    if valid {
        Ok(disk.to_owned())
    } else {
        Err(invalid(
            "install_disk",
            format!("{disk:?} must be a device path such as /dev/sda"),
        ))
    }
}

/// Hetzner server names are hostnames; Talos wants the first label to be
/// 1-63 characters and the whole name at most 253.
fn check_hostname(hostname: &str) -> Result<String, ConfigError> {
    if labels::is_dns_subdomain(hostname) {
        Ok(hostname.to_owned())
    } else {
        Err(invalid(
            "hostname",
            format!("{hostname:?} must be a lower-case hostname (labels of [a-z0-9-])"),
        ))
    }
}

/// Linux interface names: 1-15 characters, no `/`, no whitespace.
fn check_interface(interface: Option<&str>) -> Result<String, ConfigError> {
    let interface = interface.unwrap_or(DEFAULT_PRIVATE_INTERFACE);
    let valid = (1..=15).contains(&interface.len())
        && interface
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'));
    if valid {
        Ok(interface.to_owned())
    } else {
        Err(invalid(
            "interface",
            format!("{interface:?} must be a network interface name such as eth0"),
        ))
    }
}

fn invalid(field: &'static str, reason: String) -> ConfigError {
    ConfigError::InvalidInput { field, reason }
}
