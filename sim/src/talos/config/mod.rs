//! A machine config as the emulated node understands it: parsed from the
//! YAML documents a client applies (or user data carries) and checked the
//! way Talos checks what the emulation relies on: the machine type, the
//! trustd token, the CAs (certificates that parse, keys that fit them and
//! only where Talos allows keys), the cluster's identity, the control plane
//! endpoint, the installer image, the hostname and the routes.
//!
//! Talos v1.14 moved most of the cluster and Kubernetes settings out of the
//! v1alpha1 document into documents of their own (`KubeClusterConfig`,
//! `KubeAPIServerCAConfig`, `DiscoveryIdentityConfig`, …) and still loads
//! the deprecated fields: a value comes from its document when there is
//! one, else from v1alpha1, and a document set beside the fields it
//! replaces is refused. Which release's rules apply is the node's running
//! release, or (unknown) the one the installer image installs.
//!
//! This file holds the parsed config, its errors, `parse` and the checks of
//! single fields (the machine type, required values); the other checks are
//! in the file named after what they check:
//!
//! - `documents`: the YAML documents as written;
//! - `multidoc`: the v1.14 documents the emulation reads, each checked;
//! - `sorting`: splitting the YAML into documents and sorting them by kind;
//! - `conflicts`: v1.14's rules for the config as a whole (documents
//!   against the v1alpha1 fields they replace, duplicates, control plane
//!   documents, etcd encryption);
//! - `kubernetes`: the cluster and Kubernetes settings, from the documents
//!   or from v1alpha1;
//! - `authorities`: the OS and Kubernetes CAs;
//! - `hostname`: the hostname, from `v1alpha1` or `HostnameConfig`;
//! - `routes`: the routes of interfaces, VLANs and link documents;
//! - `subnets`: kubelet's and etcd's address filters, the pod and service
//!   ranges;
//! - `kube_network`: v1.14's `KubeNetworkConfig` and its checks;
//! - `strict`: unknown keys and documents, refused as Talos' decoder does.

mod authorities;
pub mod components;
mod conflicts;
pub mod documents;
mod hostname;
mod kube_network;
mod kubernetes;
pub mod multidoc;
mod routes;
mod sorting;
mod strict;
mod subnets;

use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value;

use self::authorities::{OS_CA, authority};
use self::documents::V1Alpha1;
use self::hostname::hostname;
use self::kubernetes::{check_images, kubernetes};
use self::multidoc::Multidoc;
use self::routes::routes;
use self::sorting::{sort_documents, yaml_documents};
pub use self::subnets::{SubnetFilter, Subnets};
use super::network::Route;
use super::pki::{CertificateAuthority, PkiError};
use super::secret::Secret;
use super::version::{TalosVersion, installer_version};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MachineType {
    #[serde(rename = "controlplane")]
    ControlPlane,
    #[serde(rename = "worker")]
    Worker,
}

/// What makes nodes one cluster: `cluster.id` and `cluster.secret` (from
/// v1.14 also `DiscoveryIdentityConfig`'s `clusterID` and `clusterSecret`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIdentity {
    pub id: String,
    secret: Secret,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineConfig {
    pub machine_type: MachineType,
    /// `machine.network.hostname` or a `HostnameConfig` document's hostname.
    pub hostname: Option<String>,
    pub install_image: String,
    /// The release the installer image installs.
    pub installs: TalosVersion,
    pub cluster: ClusterIdentity,
    pub cluster_name: String,
    pub endpoint: String,
    /// `machine.token`: what trustd asks of a node that wants a certificate.
    pub trustd_token: Secret,
    pub os_ca: CertificateAuthority,
    pub kubernetes_ca: CertificateAuthority,
    /// The tag of `cluster.apiServer.image` or `KubeAPIServerConfig.image`
    /// (`registry.k8s.io/kube-apiserver:v1.35.2` → `v1.35.2`): the
    /// Kubernetes version the API server runs. None when the config names
    /// no image (Talos then runs its default).
    pub kubernetes_version: Option<String>,
    /// The tags of `cluster.controllerManager.image` and
    /// `cluster.scheduler.image`, or of their v1.14 documents' images
    /// (None: the API server's release).
    pub controller_manager_version: Option<String>,
    pub scheduler_version: Option<String>,
    /// The tag of `machine.kubelet.image` or `KubeletConfig.image`: the
    /// kubelet's version (None: Talos' default).
    pub kubelet_version: Option<String>,
    /// (name, contents), applied at bootstrap: the `KubeInlineManifestConfig`
    /// documents in order, then `cluster.inlineManifests`.
    pub inline_manifests: Vec<(String, Secret)>,
    /// `cluster.token` (`<id>.<secret>`): the kubelets' bootstrap token.
    pub bootstrap_token: Secret,
    /// `cluster.proxy.image` or `KubeProxyConfig.image` (None: Talos'
    /// default), unless kube-proxy is disabled (then the outer None).
    pub kube_proxy: Option<Option<String>>,
    /// `cluster.coreDNS.image` or `KubeCoreDNSConfig.image` likewise.
    pub core_dns: Option<Option<String>>,
    pub routes: Vec<Route>,
    /// Where kubelet and etcd take their addresses from.
    pub subnets: Subnets,
    pub warnings: Vec<String>,
    /// The documents as applied: what Talos keeps at [`CONFIG_PATH`].
    pub text: Secret,
    /// What its Kubernetes components are started with.
    pub components: components::Settings,
}

/// Where Talos keeps the machine config it runs (on the STATE partition).
pub const CONFIG_PATH: &str = "/system/state/config.yaml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("document {document} is not valid YAML: {reason}")]
    Yaml { document: usize, reason: String },
    #[error("document {document} is not a mapping")]
    NotAMapping { document: usize },
    #[error("document {document} has neither `version` nor `kind`")]
    Unrecognized { document: usize },
    #[error("unknown config version {0:?} (expected v1alpha1)")]
    UnknownVersion(String),
    /// Talos' decoder refused a document (unknown keys or kind), in its words.
    #[error("{0}")]
    Decode(String),
    #[error("more than one v1alpha1 document")]
    DuplicateV1Alpha1,
    #[error("more than one HostnameConfig document")]
    DuplicateHostnameConfig,
    #[error("the v1alpha1 document (version: v1alpha1) is missing")]
    MissingV1Alpha1,
    #[error("{document}: {reason}")]
    Malformed { document: String, reason: String },
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("unknown machine type {0:?} (expected controlplane or worker)")]
    UnknownMachineType(String),
    #[error("{field} {source}")]
    Pki {
        field: &'static str,
        source: PkiError,
    },
    #[error("{0} is not allowed on worker nodes: only control planes hold the CA keys")]
    KeyOnWorker(&'static str),
    #[error("etcd config is only allowed on control plane machines (cluster.etcd)")]
    ControlPlaneOnly,
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// A rule of Talos for the config as a whole, in its words.
    #[error("{0}")]
    Rule(String),
}

impl ConfigError {
    fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

fn typed<T: serde::de::DeserializeOwned>(value: Value, document: &str) -> Result<T, ConfigError> {
    serde_yaml_ng::from_value(value).map_err(|e| ConfigError::Malformed {
        document: document.to_string(),
        reason: e.to_string(),
    })
}

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(|v| v.trim()).filter(|v| !v.is_empty())
}

fn required(value: Option<&String>, field: &'static str) -> Result<String, ConfigError> {
    non_empty(value)
        .map(str::to_string)
        .ok_or(ConfigError::Missing(field))
}

/// Parses and checks a machine config for a node running `talos` (which
/// decides the document kinds it knows; None accepts all).
pub fn parse(text: &str, talos: Option<&TalosVersion>) -> Result<MachineConfig, ConfigError> {
    let documents = sort_documents(text, talos)?;
    let v1alpha1 = documents.v1alpha1.ok_or(ConfigError::MissingV1Alpha1)?;
    let raw: V1Alpha1 = typed(v1alpha1.clone(), "v1alpha1")?;
    let machine = raw.machine.ok_or(ConfigError::Missing("machine"))?;
    let cluster = raw.cluster.ok_or(ConfigError::Missing("cluster"))?;
    let mut warnings = Vec::new();
    let machine_type = match machine.machine_type.as_deref().map(str::trim) {
        Some("controlplane") => MachineType::ControlPlane,
        Some("init") => {
            warnings.push("use \"controlplane\" instead of \"init\" for machine type".into());
            MachineType::ControlPlane
        }
        Some("worker") => MachineType::Worker,
        other => {
            return Err(ConfigError::UnknownMachineType(
                other.unwrap_or_default().to_string(),
            ));
        }
    };
    let control_plane = machine_type == MachineType::ControlPlane;
    let trustd_token = Secret::new(required(machine.token.as_ref(), "machine.token")?);
    let os_ca = authority(machine.ca.as_ref(), &OS_CA, control_plane)?;
    // Only v1.14 and later (or an unknown release) let these kinds through.
    let docs = Multidoc::read(&documents.others)?;
    let (install_image, install_field) = match &docs.install {
        Some(doc) => {
            const FIELD: &str = "UnattendedInstallConfig.installer.image";
            (required(doc.installer.image.as_ref(), FIELD)?, FIELD)
        }
        None => {
            const FIELD: &str = "machine.install.image";
            let image = machine.install.as_ref().and_then(|i| i.image.as_ref());
            (required(image, FIELD)?, FIELD)
        }
    };
    let installs = installer_version(&install_image)
        .map_err(|e| ConfigError::invalid(install_field, e.to_string()))?;
    let release = talos.unwrap_or(&installs);
    if release.at_least(1, 14) {
        conflicts::duplicates(&documents.others)?;
        conflicts::with_v1alpha1(&v1alpha1, &documents.others)?;
        conflicts::whole(&v1alpha1, &documents.others, control_plane)?;
        check_images(&machine, &cluster, &docs, control_plane, release)?;
    }
    let hostname = hostname(&machine, documents.hostname)?;
    let routes = routes(&machine, documents.links)?;
    let subnets = subnets::subnets(&machine, &cluster, &docs)?;
    let bootstrap_token = Secret::new(required(cluster.token.as_ref(), "cluster.token")?);
    let kube = kubernetes(&machine, &cluster, &docs, control_plane)?;
    if !control_plane && cluster.etcd.as_ref().is_some_and(|e| !e.is_null()) {
        return Err(ConfigError::ControlPlaneOnly);
    }
    Ok(MachineConfig {
        machine_type,
        hostname,
        install_image,
        installs,
        cluster: kube.identity,
        cluster_name: kube.cluster_name,
        endpoint: kube.endpoint,
        trustd_token,
        os_ca,
        kubernetes_ca: kube.kubernetes_ca,
        kubernetes_version: kube.kubernetes_version,
        controller_manager_version: kube.controller_manager_version,
        scheduler_version: kube.scheduler_version,
        kubelet_version: kube.kubelet_version,
        inline_manifests: kube.inline_manifests,
        bootstrap_token,
        kube_proxy: kube.kube_proxy,
        core_dns: kube.core_dns,
        routes,
        subnets,
        warnings,
        text: Secret::new(text),
        components: components::read(text),
    })
}

/// Whether user data is meant as a Talos machine config at all; anything
/// else (a cloud-init file, a script) leaves the node in maintenance mode.
pub fn is_machine_config(text: &str) -> bool {
    yaml_documents(text).is_ok_and(|documents| {
        documents.iter().any(|(_, value)| {
            value.get("version").is_some()
                || value.get("machine").is_some()
                || (value.get("apiVersion").is_some() && value.get("kind").is_some())
        })
    })
}

impl MachineConfig {
    pub fn is_control_plane(&self) -> bool {
        self.machine_type == MachineType::ControlPlane
    }

    /// What in `next` Talos cannot take without a reboot, if anything.
    pub fn reboot_needed_for(&self, next: &MachineConfig) -> Option<&'static str> {
        if self.machine_type != next.machine_type {
            Some("the machine type changes")
        } else if self.cluster != next.cluster {
            Some("the node moves to another cluster")
        } else if self.os_ca != next.os_ca {
            Some("the OS CA changes")
        } else {
            None
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
