//! Talos v1.14's rules for the config as a whole, in its words: a document
//! kind appears once (per name), each new document and the deprecated
//! v1alpha1 fields it replaces are not both set (the documents'
//! `V1Alpha1ConflictValidate`), the Kubernetes control plane documents
//! stay on control planes, a control plane's API server has an etcd
//! encryption config, and discovery has an identity.
//!
//! "Set" is what Talos' Go types make of the YAML: a key present with a
//! value that is not null (an empty mapping counts), a string that is not
//! empty, a number that is not zero.

use std::collections::BTreeSet;

use serde_yaml_ng::Value;

use super::ConfigError;
use super::documents::KINDS_V1_14;

/// The kinds Talos allows on control planes only (`ControlplaneOnlyDocument`).
const CONTROL_PLANE_ONLY: &[&str] = &[
    "KubeAPIServerConfig",
    "KubeAdmissionControlConfig",
    "KubeAggregatorCAConfig",
    "KubeAuditPolicyConfig",
    "KubeAuthenticationConfig",
    "KubeAuthorizerConfig",
    "KubeControllerManagerConfig",
    "KubeCoreDNSConfig",
    "KubeEtcdEncryptionConfig",
    "KubeFlannelCNIConfig",
    "KubeProxyConfig",
    "KubeSchedulerConfig",
    "KubeServiceAccountConfig",
    "KubeTalosAPIAccessConfig",
];

const ADMISSION: &str = "admission control plugin config is already set in v1alpha1 config";

/// The value at a dotted path, unless missing or null.
fn at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(value, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

fn set(value: &Value, path: &str) -> bool {
    at(value, path).is_some()
}

/// A string that is not empty (Go's `!= ""`).
fn text(value: &Value, path: &str) -> bool {
    at(value, path)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

/// A mapping or list with something in it (Go's `len(…) > 0`).
fn filled(value: &Value, path: &str) -> bool {
    match at(value, path) {
        Some(Value::Mapping(m)) => !m.is_empty(),
        Some(Value::Sequence(s)) => !s.is_empty(),
        _ => false,
    }
}

fn nonzero(value: &Value, path: &str) -> bool {
    at(value, path)
        .and_then(Value::as_i64)
        .is_some_and(|n| n != 0)
}

/// Whether `machine.network.nameservers` yields a resolver (an IP).
fn nameservers(v1alpha1: &Value) -> bool {
    at(v1alpha1, "machine.network.nameservers")
        .and_then(Value::as_sequence)
        .is_some_and(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .any(|s| s.parse::<std::net::IpAddr>().is_ok())
        })
}

/// Whether a document's `hostDNS` has anything switched on or named.
fn host_dns(document: &Value) -> bool {
    at(document, "hostDNS")
        .and_then(Value::as_mapping)
        .is_some_and(|m| {
            m.values()
                .any(|v| !matches!(v, Value::Null | Value::Bool(false)))
        })
}

/// The first message whose condition holds.
fn first(rules: &[(bool, &'static str)]) -> Option<&'static str> {
    rules.iter().find(|(holds, _)| *holds).map(|(_, m)| *m)
}

/// What a document of `kind` conflicts with in the v1alpha1 document, in
/// Talos' words (`V1Alpha1ConflictValidate`).
fn conflict(kind: &str, document: &Value, v1: &Value) -> Option<&'static str> {
    let set = |path| set(v1, path);
    match kind {
        // Talos checks the admission plugins for the authorizer too.
        "KubeAdmissionControlConfig" | "KubeAuthorizerConfig" => {
            first(&[(filled(v1, "cluster.apiServer.admissionControl"), ADMISSION)])
        }
        "KubeAggregatorCAConfig" => first(&[(
            set("cluster.aggregatorCA"),
            "kube-apiserver aggregator CA is already set in v1alpha1 config \
             (.cluster.aggregatorCA), please remove it and use the new KubeAggregatorCAConfig \
             document instead",
        )]),
        "KubeAPIServerConfig" => first(&[
            (
                set("cluster.apiServer"),
                "kube-apiserver config is already set in v1alpha1 config (.cluster.apiServer)",
            ),
            (
                nonzero(v1, "cluster.controlPlane.localAPIServerPort"),
                "kube-apiserver API port is already set in v1alpha1 config \
                 (.cluster.controlPlane.localAPIServerPort)",
            ),
        ]),
        "KubeAPIServerCAConfig" => first(&[(
            set("cluster.ca"),
            "kube-apiserver CA is already set in v1alpha1 config (.cluster.ca)",
        )]),
        "KubeAuditPolicyConfig" => first(&[(
            filled(v1, "cluster.apiServer.auditPolicy"),
            "audit policy config is already set in v1alpha1 config",
        )]),
        "KubeClusterConfig" => first(&[
            (
                text(v1, "cluster.clusterName"),
                "cluster name is already set in the v1alpha1 config (.cluster.clusterName). \
                 Please remove it and use only the new KubeClusterConfig document to avoid \
                 conflicts",
            ),
            (
                set("cluster.controlPlane.endpoint"),
                "cluster endpoint is already set in the v1alpha1 config \
                 (.cluster.controlPlane.endpoint). Please remove it and use only the new \
                 KubeClusterConfig document to avoid conflicts",
            ),
        ]),
        "KubeControllerManagerConfig" => first(&[
            (
                set("cluster.controllerManager"),
                "kube-controller-manager config is already set in v1alpha1 config \
                 (.cluster.controllerManager)",
            ),
            (
                set("machine.controlPlane.controllerManager"),
                "kube-controller-manager config is already set in v1alpha1 config \
                 (.machine.controlplane.controllerManager)",
            ),
        ]),
        "KubeCoreDNSConfig" => first(&[(
            set("cluster.coreDNS"),
            "CoreDNS config is already set in v1alpha1 config (.cluster.coreDNS)",
        )]),
        "KubeCredentialProviderConfig" => first(&[(
            set("machine.kubelet"),
            "cannot use KubeCredentialProviderConfig with legacy kubelet configuration \
             (.machine.kubelet)",
        )]),
        "KubeEtcdEncryptionConfig" => first(&[(
            text(v1, "cluster.secretboxEncryptionSecret")
                || text(v1, "cluster.aescbcEncryptionSecret"),
            "etcd encryption config is already set in v1alpha1 config",
        )]),
        "KubeFlannelCNIConfig" => first(&[(
            set("cluster.network"),
            "cluster network config in v1alpha1 config (.machine.cluster.network) can't be used \
             with KubeFlannelCNIConfig document, please remove it to avoid conflicts",
        )]),
        "KubeletConfig" => first(&[(
            set("machine.kubelet"),
            "kubelet config is already set in v1alpha1 config (.machine.kubelet)",
        )]),
        "KubeNetworkConfig" => first(&[(
            set("cluster.network"),
            "cluster network config is already set in the v1alpha1 config \
             (.machine.cluster.network). Please remove it and use only the new \
             KubeNetworkConfig document to avoid conflicts",
        )]),
        "KubeNodeConfig" => first(&[
            (
                set("cluster.allowSchedulingOnControlPlanes"),
                ".cluster.allowSchedulingOnControlPlanes is already set in v1alpha1 config",
            ),
            (
                set("cluster.allowSchedulingOnMasters"),
                ".cluster.allowSchedulingOnMasters is already set in v1alpha1 config",
            ),
            (
                set("machine.kubelet.skipNodeRegistration"),
                ".machine.kubelet.skipNodeRegistration is already set in v1alpha1 config",
            ),
            (
                set("machine.kubelet.registerWithFQDN"),
                ".machine.kubelet.registerWithFQDN is already set in v1alpha1 config",
            ),
            (
                set("machine.kubelet.nodeIP"),
                ".machine.kubelet.nodeIP is already set in v1alpha1 config",
            ),
            (
                set("machine.nodeLabels"),
                ".machine.nodeLabels is already set in v1alpha1 config",
            ),
            (
                set("machine.nodeAnnotations"),
                ".machine.nodeAnnotations is already set in v1alpha1 config",
            ),
            (
                set("machine.nodeTaints"),
                ".machine.nodeTaints is already set in v1alpha1 config",
            ),
        ]),
        "KubePrismConfig" => first(&[(
            set("machine.features.kubePrism"),
            "KubePrism config in v1alpha1 config (.machine.features.kubePrism) can't be used \
             with KubePrismConfig document, please remove it to avoid conflicts",
        )]),
        "KubeProxyConfig" => first(&[(
            set("cluster.proxy"),
            "cluster proxy config in v1alpha1 config (.machine.cluster.proxy) can't be used \
             with KubeProxyConfig document, please remove it to avoid conflicts",
        )]),
        "KubeSchedulerConfig" => first(&[
            (
                set("cluster.scheduler"),
                "kube-scheduler config is already set in v1alpha1 config (.cluster.scheduler)",
            ),
            (
                set("machine.controlPlane.scheduler"),
                "kube-scheduler config is already set in v1alpha1 config \
                 (.machine.controlplane.scheduler)",
            ),
        ]),
        "KubeServiceAccountConfig" => first(&[(
            set("cluster.serviceAccount"),
            "service account is already set in v1alpha1 config (.cluster.serviceAccount)",
        )]),
        "KubeTalosAPIAccessConfig" => first(&[(
            set("machine.features.kubernetesTalosAPIAccess"),
            ".machine.features.kubernetesTalosAPIAccess is already set in v1alpha1 config",
        )]),
        "DiscoveryIdentityConfig" => first(&[(
            text(v1, "cluster.id") || text(v1, "cluster.secret"),
            "cluster identity is already configured in .cluster.id/.cluster.secret of the \
             v1alpha1 config",
        )]),
        "DiscoveryServiceConfig" => first(&[(
            set("cluster.discovery"),
            "discovery service is already configured in .cluster.discovery of the v1alpha1 \
             config",
        )]),
        "ResolverConfig" => first(&[
            (
                set("machine.network.searchDomains"),
                ".machine.network.searchDomains is already set in v1alpha1 config",
            ),
            (
                nameservers(v1),
                ".machine.network.nameservers is already set in v1alpha1 config",
            ),
            (
                at(v1, "machine.network.disableSearchDomain").and_then(Value::as_bool)
                    == Some(true),
                ".machine.network.disableSearchDomain is already set in v1alpha1 config",
            ),
            (
                host_dns(document) && set("machine.features.hostDNS"),
                ".machine.features.hostDNS is already set in v1alpha1 config",
            ),
        ]),
        "UnattendedInstallConfig" => first(&[(
            set("machine.install"),
            "UnattendedInstallConfig config is incompatible with v1alpha1 config \
             (.machine.install)",
        )]),
        "CRIBaseRuntimeSpecConfig" => first(&[(
            set("machine.baseRuntimeSpecOverrides"),
            "base runtime spec overrides are already set in v1alpha1 config",
        )]),
        "ImageCacheConfig" => first(&[(
            set("machine.features.imageCache"),
            "image cache config is already set in v1alpha1 config",
        )]),
        _ => None,
    }
}

fn rule(message: impl Into<String>) -> ConfigError {
    ConfigError::Rule(message.into())
}

/// Talos' `duplicate document` for the v1.14 kinds: one document of a
/// kind, or one per name for the named kinds.
pub(super) fn duplicates(documents: &[(String, Value)]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (kind, document) in documents {
        if !KINDS_V1_14.contains(&kind.as_str()) {
            continue;
        }
        let name = document.get("name").and_then(Value::as_str).unwrap_or("");
        let id = format!("{kind}/{name}");
        if !seen.insert(id.clone()) {
            return Err(rule(format!("duplicate document: {id}")));
        }
    }
    Ok(())
}

/// The first document that conflicts with the v1alpha1 document.
pub(super) fn with_v1alpha1(
    v1alpha1: &Value,
    documents: &[(String, Value)],
) -> Result<(), ConfigError> {
    for (kind, document) in documents {
        if let Some(message) = conflict(kind, document, v1alpha1) {
            return Err(rule(message));
        }
    }
    Ok(())
}

/// The rules Talos v1.14 checks of the config as a whole.
pub(super) fn whole(
    v1alpha1: &Value,
    documents: &[(String, Value)],
    control_plane: bool,
) -> Result<(), ConfigError> {
    let has = |kind: &str| documents.iter().any(|(k, _)| k == kind);
    if has("DiscoveryServiceConfig") && !has("DiscoveryIdentityConfig") {
        if !text(v1alpha1, "cluster.id") {
            return Err(rule(
                "cluster ID (.cluster.id or DiscoveryIdentityConfig) should be set when cluster \
                 discovery (DiscoveryServiceConfig) is enabled",
            ));
        }
        if !text(v1alpha1, "cluster.secret") {
            return Err(rule(
                "cluster secret (.cluster.secret or DiscoveryIdentityConfig) should be set when \
                 cluster discovery (DiscoveryServiceConfig) is enabled",
            ));
        }
    }
    let kubernetes_ca = has("KubeAPIServerCAConfig")
        || set(v1alpha1, "cluster.ca")
        || set(v1alpha1, "cluster.acceptedCAs");
    let encrypted = has("KubeEtcdEncryptionConfig")
        || text(v1alpha1, "cluster.secretboxEncryptionSecret")
        || text(v1alpha1, "cluster.aescbcEncryptionSecret");
    if control_plane && kubernetes_ca && !encrypted {
        return Err(rule(
            "etcd encryption config is required for control plane machines running kube-apiserver",
        ));
    }
    let misplaced: BTreeSet<&str> = documents
        .iter()
        .map(|(kind, _)| kind.as_str())
        .filter(|kind| CONTROL_PLANE_ONLY.contains(kind))
        .collect();
    if !control_plane && !misplaced.is_empty() {
        let kinds: Vec<&str> = misplaced.into_iter().collect();
        return Err(rule(format!(
            "the following document kinds are only allowed on control plane machines: [{}]",
            kinds.join(" ")
        )));
    }
    Ok(())
}
