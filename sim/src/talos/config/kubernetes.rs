//! The cluster and Kubernetes settings of a config, each taken as Talos'
//! config container takes it: from its v1.14 document when there is one,
//! else from the deprecated v1alpha1 field (the cluster identity the other
//! way round, as Talos reads it; `conflicts` makes sure they are not both
//! set). Inline manifests come from both: the documents' first, in
//! document order, then `cluster.inlineManifests`. On Talos v1.14 and
//! later the Kubernetes images must also name a release the node's Talos
//! supports.

use super::authorities::{
    Encoding, KUBERNETES_ACCEPTED_CA, KUBERNETES_CA, KUBERNETES_CA_DOCUMENT, authority, read,
};
use super::documents::{self, Cluster, Machine};
use super::multidoc::{self, Multidoc};
use super::{ClusterIdentity, ConfigError, non_empty, required};
use crate::talos::kube_api::version::KubernetesVersion;
use crate::talos::pki::CertificateAuthority;
use crate::talos::secret::Secret;
use crate::talos::version::{TalosVersion, image_tag};

/// What the emulation reads of the cluster and its Kubernetes.
pub(super) struct Kubernetes {
    pub identity: ClusterIdentity,
    pub cluster_name: String,
    pub endpoint: String,
    pub kubernetes_ca: CertificateAuthority,
    pub kubernetes_version: Option<String>,
    pub controller_manager_version: Option<String>,
    pub scheduler_version: Option<String>,
    pub kubelet_version: Option<String>,
    pub inline_manifests: Vec<(String, Secret)>,
    pub kube_proxy: Option<Option<String>>,
    pub core_dns: Option<Option<String>>,
}

/// `https://host[:port][/…]`, as the control plane endpoint must be; Err
/// says why not.
fn endpoint(text: &str) -> Result<String, String> {
    let rest = text
        .strip_prefix("https://")
        .ok_or_else(|| format!("{text:?} is not an https:// URL"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.parse::<u16>().is_ok())
        .map_or(authority, |(host, _)| host);
    if host.is_empty() {
        return Err(format!("{text:?} names no host"));
    }
    Ok(text.to_string())
}

/// The cluster identity: v1alpha1's when it sets one, else the document's.
fn identity(cluster: &Cluster, docs: &Multidoc) -> Result<ClusterIdentity, ConfigError> {
    let legacy =
        non_empty(cluster.id.as_ref()).is_some() || non_empty(cluster.secret.as_ref()).is_some();
    match docs.identity.as_ref().filter(|_| !legacy) {
        Some(doc) => Ok(ClusterIdentity {
            id: required(doc.cluster_id.as_ref(), "DiscoveryIdentityConfig.clusterID")?,
            secret: Secret::new(required(
                doc.cluster_secret.as_ref(),
                "DiscoveryIdentityConfig.clusterSecret",
            )?),
        }),
        None => Ok(ClusterIdentity {
            id: required(cluster.id.as_ref(), "cluster.id")?,
            secret: Secret::new(required(cluster.secret.as_ref(), "cluster.secret")?),
        }),
    }
}

fn kubernetes_ca(
    cluster: &Cluster,
    docs: &Multidoc,
    control_plane: bool,
) -> Result<CertificateAuthority, ConfigError> {
    let Some(doc) = &docs.api_server_ca else {
        return authority(cluster.ca.as_ref(), &KUBERNETES_CA, control_plane);
    };
    match &doc.issuing_ca {
        Some(issuing) => read(
            issuing.cert.as_ref(),
            issuing.key.as_ref(),
            &KUBERNETES_CA_DOCUMENT,
            Encoding::Pem,
            control_plane,
        ),
        None => read(
            doc.accepted_cas.first(),
            None,
            &KUBERNETES_ACCEPTED_CA,
            Encoding::Pem,
            control_plane,
        ),
    }
}

/// Off (None), or on with its image (None: Talos' default).
fn addon(
    document: Option<&multidoc::Component>,
    legacy: Option<&documents::Addon>,
) -> Option<Option<String>> {
    match (document, legacy) {
        (Some(doc), _) if !doc.is_enabled() => None,
        (Some(doc), _) => Some(non_empty(doc.image.as_ref()).map(str::to_string)),
        (None, Some(a)) if a.disabled => None,
        (None, Some(a)) => Some(a.image.clone()),
        (None, None) => Some(None),
    }
}

/// The image a component runs: its document's, else v1alpha1's.
fn image<'c>(
    document: Option<&'c multidoc::Component>,
    legacy: Option<&'c String>,
) -> Option<&'c str> {
    match document {
        Some(doc) => doc.image.as_deref(),
        None => legacy.map(String::as_str),
    }
}

/// A v1alpha1 component's image.
fn legacy(component: Option<&documents::Component>) -> Option<&String> {
    component.and_then(|c| c.image.as_ref())
}

fn tag(image: Option<&str>) -> Option<String> {
    image.and_then(image_tag).map(str::to_string)
}

/// Talos' check that an image runs a Kubernetes release `talos` supports
/// (`ValidateKubernetesImageTag`).
fn supported(image: &str, talos: &TalosVersion) -> Result<(), String> {
    let version = image
        .rfind(":v")
        .map(|at| &image[at + 1..])
        .map(|tag| tag.split('@').next().unwrap_or(tag))
        .ok_or_else(|| format!("invalid image reference: {image:?}"))
        .and_then(|tag| {
            KubernetesVersion::parse(tag).ok_or_else(|| format!("{tag:?} is not a version"))
        })
        .map_err(|e| {
            format!("failed to parse Kubernetes version from image reference {image:?}: {e}")
        })?;
    version.supported_with(talos)
}

pub(super) fn kubernetes(
    machine: &Machine,
    cluster: &Cluster,
    docs: &Multidoc,
    control_plane: bool,
) -> Result<Kubernetes, ConfigError> {
    let identity = identity(cluster, docs)?;
    let (cluster_name, endpoint) = match &docs.cluster {
        Some(doc) => (
            required(doc.cluster_name.as_ref(), "KubeClusterConfig.clusterName")?,
            endpoint(&required(
                doc.endpoint.as_ref(),
                "KubeClusterConfig.endpoint",
            )?)
            .map_err(|e| {
                ConfigError::invalid(
                    "KubeClusterConfig",
                    format!("cluster endpoint is invalid: {e}"),
                )
            })?,
        ),
        None => (
            non_empty(cluster.cluster_name.as_ref())
                .unwrap_or("talos-default")
                .to_string(),
            endpoint(&required(
                cluster
                    .control_plane
                    .as_ref()
                    .and_then(|c| c.endpoint.as_ref()),
                "cluster.controlPlane.endpoint",
            )?)
            .map_err(|e| ConfigError::invalid("cluster.controlPlane.endpoint", e))?,
        ),
    };
    let mut inline_manifests: Vec<(String, Secret)> = docs
        .inline_manifests
        .iter()
        .map(|m| (m.name.clone(), Secret::new(m.manifest.clone())))
        .collect();
    inline_manifests.extend(
        cluster
            .inline_manifests
            .iter()
            .map(|m| (m.name.clone(), Secret::new(m.contents.clone()))),
    );
    Ok(Kubernetes {
        identity,
        cluster_name,
        endpoint,
        kubernetes_ca: kubernetes_ca(cluster, docs, control_plane)?,
        kubernetes_version: tag(image(
            docs.api_server.as_ref(),
            legacy(cluster.api_server.as_ref()),
        )),
        controller_manager_version: tag(image(
            docs.controller_manager.as_ref(),
            legacy(cluster.controller_manager.as_ref()),
        )),
        scheduler_version: tag(image(
            docs.scheduler.as_ref(),
            legacy(cluster.scheduler.as_ref()),
        )),
        kubelet_version: tag(image(
            docs.kubelet.as_ref(),
            machine.kubelet.as_ref().and_then(|k| k.image.as_ref()),
        )),
        inline_manifests,
        kube_proxy: addon(docs.proxy.as_ref(), cluster.proxy.as_ref()),
        core_dns: addon(docs.core_dns.as_ref(), cluster.core_dns.as_ref()),
    })
}

/// Talos v1.14's check of the images a config names (kubelet's; on a
/// control plane the API server's, the controller manager's and the
/// scheduler's): each must run a Kubernetes release `talos` supports. An
/// image left to Talos' default passes.
pub(super) fn check_images(
    machine: &Machine,
    cluster: &Cluster,
    docs: &Multidoc,
    control_plane: bool,
    talos: &TalosVersion,
) -> Result<(), ConfigError> {
    let check = |document: Option<&multidoc::Component>,
                 legacy: Option<&String>,
                 kind: &str,
                 what: &str,
                 legacy_what: &str| {
        let (image, field, what) = match document {
            Some(doc) if doc.is_enabled() => (doc.image.as_deref(), kind, what),
            Some(_) => (None, kind, what),
            None => (non_empty(legacy), "v1alpha1.Config", legacy_what),
        };
        match image.filter(|i| !i.is_empty()) {
            Some(image) => supported(image, talos).map_err(|e| {
                ConfigError::invalid(field, format!("{what} image is not valid: {e}"))
            }),
            None => Ok(()),
        }
    };
    check(
        docs.kubelet.as_ref(),
        machine.kubelet.as_ref().and_then(|k| k.image.as_ref()),
        "KubeletConfig",
        "kubelet",
        "kubelet",
    )?;
    if control_plane {
        check(
            docs.api_server.as_ref(),
            legacy(cluster.api_server.as_ref()),
            "KubeAPIServerConfig",
            "kube-apiserver",
            "kube-apiserver",
        )?;
        check(
            docs.controller_manager.as_ref(),
            legacy(cluster.controller_manager.as_ref()),
            "KubeControllerManagerConfig",
            "kube-controller-manager",
            "kube-controller-manager",
        )?;
        check(
            docs.scheduler.as_ref(),
            legacy(cluster.scheduler.as_ref()),
            "KubeSchedulerConfig",
            "scheduler",
            "kube-scheduler",
        )?;
    }
    Ok(())
}
