//! Machine configs for private-only Talos nodes on Hetzner Cloud, shaped like
//! Talos' own output for the contract (v1.11, v1.12 or v1.13), plus hct's
//! settings.
//!
//! Where things live:
//! - `input`: [`NodeConfigInput`], its defaults and checks.
//! - `contract`: what each contract emits, and the Kubernetes releases it runs.
//! - `machine`: the `machine` section (kubelet, features, labels, taints).
//! - `install`: the install disk and the Image Factory installer image.
//! - `network`: DHCP, the default route via the gateway, the hostname
//!   (v1.11 inline; v1.12 and v1.13 `HostnameConfig`/`LinkConfig`/
//!   `DHCPv4Config`, v1.13 without `machine.network`).
//! - `cluster`: the `cluster` section (endpoint, ranges, CAs, components, etcd).
//! - `labels`: Kubernetes rules for node labels and taints.
//! - `patch`: user `config_patches` (strategic merge, JSON6902, `$patch: delete`).
//! - `checks`: the finished config's settings hct relies on (`known_keys`:
//!   the keys each release knows).
//! - `user_data`: fitting a config into Hetzner's 32 KiB user data.
//! - `images`: the Kubernetes images a config runs, and moving a running
//!   config's control-plane images to another release (`upgrade-k8s`).
//! - `fingerprint`: a config's meaning as a SHA-256 (applied vs running).

mod checks;
mod cluster;
mod contract;
mod documents;
mod fingerprint;
mod images;
mod input;
mod install;
mod known_keys;
mod labels;
mod machine;
mod manifests;
mod multidoc_v1_14;
mod network;
mod patch;
mod user_data;

use std::fmt;

use serde_json::json;

pub use contract::Contract;
pub(crate) use contract::check_kubernetes_supported;
pub use fingerprint::config_sha256;
pub use images::{
    CONTROL_PLANE_COMPONENTS, RunningImages, control_plane_image, kubelet_image,
    with_control_plane_images,
};
pub(crate) use input::is_cluster_name;
pub use input::{
    DEFAULT_INSTALL_DISK, DEFAULT_PRIVATE_INTERFACE, DEFAULT_TALOS_VERSION, NodeConfigInput, Role,
};
pub(crate) use machine::KUBE_PRISM_PORT;
pub use patch::PatchError;
pub use user_data::{USER_DATA_LIMIT, user_data};

use crate::network_plan::NetworkPlan;
use crate::talos::NodeSecrets;
use crate::talos::yaml;

/// Why a machine config could not be made. Never carries secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "unsupported Talos version {0:?}: hct generates configs for Talos v1.11 to v1.14 (e.g. v1.14.0)"
    )]
    UnsupportedTalosVersion(String),
    #[error(
        "Kubernetes {kubernetes} is not supported by Talos {talos}, which runs {oldest} to {newest}"
    )]
    UnsupportedKubernetesVersion {
        kubernetes: String,
        talos: String,
        oldest: String,
        newest: String,
    },
    #[error("invalid {field}: {reason}")]
    InvalidInput { field: &'static str, reason: String },
    #[error("config_patches[{index}]: {error}")]
    Patch {
        index: usize,
        #[source]
        error: PatchError,
    },
    #[error(
        "a control plane's config holds the cluster's keys, and only a worker's share of the \
         secrets is at hand (a worker_join); this is a bug in hct"
    )]
    NoClusterSecrets,
    #[error("config_patches make a config this node cannot run with: {0}")]
    Unworkable(String),
    /// The config a node runs could not be read or changed.
    #[error("the machine config the node runs: {0}")]
    RunningConfig(String),
    #[error(
        "the machine config is {size} bytes ({compressed} gzipped and base64-encoded), more than \
         Hetzner's user data limit of {limit} bytes; trim config_patches (inline manifests are \
         the usual bulk: move them to cluster.extraManifests URLs)"
    )]
    UserDataTooLarge {
        size: usize,
        compressed: usize,
        limit: usize,
    },
}

/// A node's machine config: multi-document YAML holding the cluster's
/// secrets. Debug output shows its size only.
#[derive(Clone, PartialEq, Eq)]
pub struct MachineConfig(String);

impl MachineConfig {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for MachineConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MachineConfig(<{} bytes, redacted>)", self.0.len())
    }
}

/// The machine config of one node: hct's settings for the plan, then the
/// user's patches in order.
pub fn generate<'a>(
    input: &NodeConfigInput,
    plan: &NetworkPlan,
    secrets: impl Into<NodeSecrets<'a>>,
) -> Result<MachineConfig, ConfigError> {
    let node = input.check()?;
    let secrets = secrets.into();
    let join = secrets.join();
    // A control plane's config holds the cluster's keys; a worker's never.
    let control_plane = match (node.role, secrets.cluster()) {
        (Role::ControlPlane, Some(all)) => Some(all),
        (Role::ControlPlane, None) => return Err(ConfigError::NoClusterSecrets),
        (Role::Worker, _) => None,
    };
    let mut main = json!({
        "version": "v1alpha1",
        "debug": false,
        // Deprecated and ignored, but still what Talos' generator writes.
        "persist": true,
        "machine": machine::section(&node, plan, &join, control_plane),
        "cluster": cluster::section(&node, plan, &join, control_plane),
    });
    let moved = if node.contract.kubernetes_documents() {
        multidoc_v1_14::split(&mut main, node.role, plan.pod_cidr_mask_size())
    } else {
        Vec::new()
    };
    manifests::into_main(&mut main, &node, &input.inline_manifests)?;
    let mut documents = vec![main];
    documents.extend(moved);
    documents.extend(network::documents(&node, plan));
    documents.extend(manifests::documents(&node, &input.inline_manifests));
    for (index, text) in input.config_patches.iter().enumerate() {
        patch::apply(&mut documents, text, node.contract)
            .map_err(|error| ConfigError::Patch { index, error })?;
    }
    if let Some(violation) = checks::check(&documents, &node, plan) {
        return Err(ConfigError::Unworkable(violation.to_string()));
    }
    Ok(MachineConfig(yaml::to_string(&documents)))
}

/// The control-plane endpoint a node's running config names
/// (`cluster.controlPlane.endpoint`, or `KubeClusterConfig` from v1.14), if
/// any; an error when the config is not YAML.
pub fn running_endpoint(config: &str) -> Result<Option<String>, ConfigError> {
    let documents =
        yaml::parse_documents(config).map_err(|e| ConfigError::RunningConfig(e.to_string()))?;
    Ok(multidoc_v1_14::endpoint(&documents).map(str::to_string))
}

#[cfg(test)]
mod tests;
