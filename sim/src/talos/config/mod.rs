//! A machine config as the emulated node understands it: parsed from the
//! YAML documents a client applies (or user data carries) and checked the
//! way Talos checks what the emulation relies on: the machine type, the
//! trustd token, the CAs (certificates that parse, keys that fit them and
//! only where Talos allows keys), the cluster's identity, the control plane
//! endpoint, the installer image, the hostname and the routes.
//!
//! This file holds the parsed config, its errors, `parse` and the checks of
//! single fields (the machine type, the endpoint, required values); the
//! other checks are in the file named after what they check:
//!
//! - `documents`: the YAML documents as written;
//! - `sorting`: splitting the YAML into documents and sorting them by kind;
//! - `authorities`: the OS and Kubernetes CAs;
//! - `hostname`: the hostname, from `v1alpha1` or `HostnameConfig`;
//! - `routes`: the routes of interfaces, VLANs and link documents;
//! - `subnets`: kubelet's and etcd's address filters, the pod and service
//!   ranges;
//! - `strict`: unknown keys and documents, refused as Talos' decoder does.

mod authorities;
pub mod documents;
mod hostname;
mod routes;
mod sorting;
mod strict;
mod subnets;

use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value;

use self::authorities::{KUBERNETES_CA, OS_CA, authority};
use self::documents::V1Alpha1;
use self::hostname::hostname;
use self::routes::routes;
use self::sorting::{sort_documents, yaml_documents};
pub use self::subnets::{SubnetFilter, Subnets};
use super::network::Route;
use super::pki::{CertificateAuthority, PkiError};
use super::secret::Secret;
use super::version::{TalosVersion, image_tag, installer_version};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MachineType {
    #[serde(rename = "controlplane")]
    ControlPlane,
    #[serde(rename = "worker")]
    Worker,
}

/// What makes nodes one cluster: `cluster.id` and `cluster.secret`.
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
    /// The tag of `cluster.apiServer.image` (`registry.k8s.io/kube-apiserver:v1.35.2`
    /// → `v1.35.2`): the Kubernetes version the API server runs. None when
    /// the config names no image (Talos then runs its default).
    pub kubernetes_version: Option<String>,
    /// The tags of `cluster.controllerManager.image` and
    /// `cluster.scheduler.image` (None: the API server's release).
    pub controller_manager_version: Option<String>,
    pub scheduler_version: Option<String>,
    /// The tag of `machine.kubelet.image`: the kubelet's version (None:
    /// Talos' default).
    pub kubelet_version: Option<String>,
    /// `cluster.inlineManifests`: (name, contents), applied at bootstrap.
    pub inline_manifests: Vec<(String, Secret)>,
    /// `cluster.token` (`<id>.<secret>`): the kubelets' bootstrap token.
    pub bootstrap_token: Secret,
    /// `cluster.proxy.image` (None: Talos' default), unless kube-proxy is
    /// disabled (then the outer None).
    pub kube_proxy: Option<Option<String>>,
    /// `cluster.coreDNS.image` likewise.
    pub core_dns: Option<Option<String>>,
    pub routes: Vec<Route>,
    /// Where kubelet and etcd take their addresses from.
    pub subnets: Subnets,
    pub warnings: Vec<String>,
    /// The documents as applied: what Talos keeps at [`CONFIG_PATH`].
    pub text: Secret,
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
    EtcdOnWorker,
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
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

/// `https://host[:port][/…]`, as `cluster.controlPlane.endpoint` must be.
fn endpoint(text: &str) -> Result<String, ConfigError> {
    const FIELD: &str = "cluster.controlPlane.endpoint";
    let rest = text
        .strip_prefix("https://")
        .ok_or_else(|| ConfigError::invalid(FIELD, format!("{text:?} is not an https:// URL")))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.parse::<u16>().is_ok())
        .map_or(authority, |(host, _)| host);
    if host.is_empty() {
        return Err(ConfigError::invalid(
            FIELD,
            format!("{text:?} names no host"),
        ));
    }
    Ok(text.to_string())
}

/// Parses and checks a machine config for a node running `talos` (which
/// decides the document kinds it knows; None accepts all).
pub fn parse(text: &str, talos: Option<&TalosVersion>) -> Result<MachineConfig, ConfigError> {
    let documents = sort_documents(text, talos)?;
    let raw: V1Alpha1 = typed(
        documents.v1alpha1.ok_or(ConfigError::MissingV1Alpha1)?,
        "v1alpha1",
    )?;
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
    let install_image = required(
        machine.install.as_ref().and_then(|i| i.image.as_ref()),
        "machine.install.image",
    )?;
    let installs = installer_version(&install_image)
        .map_err(|e| ConfigError::invalid("machine.install.image", e.to_string()))?;
    let hostname = hostname(&machine, documents.hostname)?;
    let routes = routes(&machine, documents.links)?;
    let subnets = subnets::subnets(&machine, &cluster)?;

    let identity = ClusterIdentity {
        id: required(cluster.id.as_ref(), "cluster.id")?,
        secret: Secret::new(required(cluster.secret.as_ref(), "cluster.secret")?),
    };
    let bootstrap_token = Secret::new(required(cluster.token.as_ref(), "cluster.token")?);
    let addon = |addon: Option<&documents::Addon>| match addon {
        Some(a) if a.disabled => None,
        Some(a) => Some(a.image.clone()),
        None => Some(None),
    };
    let kube_proxy = addon(cluster.proxy.as_ref());
    let core_dns = addon(cluster.core_dns.as_ref());
    let endpoint = endpoint(&required(
        cluster
            .control_plane
            .as_ref()
            .and_then(|c| c.endpoint.as_ref()),
        "cluster.controlPlane.endpoint",
    )?)?;
    let kubernetes_ca = authority(cluster.ca.as_ref(), &KUBERNETES_CA, control_plane)?;
    if !control_plane && cluster.etcd.as_ref().is_some_and(|e| !e.is_null()) {
        return Err(ConfigError::EtcdOnWorker);
    }
    let component_version = |component: Option<&documents::Component>| {
        component
            .and_then(|c| c.image.as_deref())
            .and_then(image_tag)
            .map(str::to_string)
    };
    let kubernetes_version = component_version(cluster.api_server.as_ref());
    let controller_manager_version = component_version(cluster.controller_manager.as_ref());
    let scheduler_version = component_version(cluster.scheduler.as_ref());
    let kubelet_version = machine
        .kubelet
        .as_ref()
        .and_then(|k| k.image.as_deref())
        .and_then(image_tag)
        .map(str::to_string);
    let inline_manifests = cluster
        .inline_manifests
        .iter()
        .map(|m| (m.name.clone(), Secret::new(m.contents.clone())))
        .collect();
    let cluster_name = non_empty(cluster.cluster_name.as_ref())
        .unwrap_or("talos-default")
        .to_string();
    Ok(MachineConfig {
        machine_type,
        hostname,
        install_image,
        installs,
        cluster: identity,
        cluster_name,
        endpoint,
        trustd_token,
        os_ca,
        kubernetes_ca,
        kubernetes_version,
        controller_manager_version,
        scheduler_version,
        kubelet_version,
        inline_manifests,
        bootstrap_token,
        kube_proxy,
        core_dns,
        routes,
        subnets,
        warnings,
        text: Secret::new(text),
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
