//! The documents Talos v1.14 moved the Kubernetes settings, the cluster
//! identity and the installer into, as the emulation reads them: each
//! decoded and checked as its own `Validate` checks it, an error prefixed
//! with the document's kind (and name, for named kinds) as Talos prefixes
//! it. Whether a value then comes from one of these or from the deprecated
//! v1alpha1 field is decided where it is read (`kubernetes`, `subnets`);
//! that they are not both set is `conflicts`' business.

use base64::Engine;
use serde::Deserialize;
use serde_yaml_ng::Value;

use super::kube_network::{KubeNetwork, check_kube_network};
use super::{ConfigError, non_empty, typed};

/// `KubeClusterConfig`: the cluster's name and the control plane endpoint.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KubeCluster {
    pub cluster_name: Option<String>,
    pub endpoint: Option<String>,
}

/// `KubeNodeConfig`: where kubelet takes the node's IP from.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KubeNode {
    #[serde(rename = "nodeIP")]
    pub node_ip: Option<super::documents::NodeIp>,
}

/// What the component documents (`KubeletConfig`, `KubeAPIServerConfig`,
/// `KubeControllerManagerConfig`, `KubeSchedulerConfig`, `KubeProxyConfig`,
/// `KubeCoreDNSConfig`) share: an image, and for some a switch.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Component {
    pub enabled: Option<bool>,
    pub image: Option<String>,
    pub mode: Option<String>,
    pub extra_args: Option<Value>,
}

impl Component {
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
}

/// `KubeAPIServerCAConfig`: the Kubernetes CA as PEM text (v1alpha1's
/// `cluster.ca` holds base64 of it).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KubeApiServerCa {
    #[serde(rename = "issuingCA")]
    pub issuing_ca: Option<CertificateAndKey>,
    #[serde(rename = "acceptedCAs")]
    pub accepted_cas: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CertificateAndKey {
    pub cert: Option<String>,
    pub key: Option<String>,
}

/// `KubeInlineManifestConfig`: one manifest applied at bootstrap.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct InlineManifest {
    pub name: String,
    pub manifest: String,
}

/// `DiscoveryIdentityConfig`: what `cluster.id` and `cluster.secret` were.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct DiscoveryIdentity {
    #[serde(rename = "clusterID")]
    pub cluster_id: Option<String>,
    #[serde(rename = "clusterSecret")]
    pub cluster_secret: Option<String>,
}

/// `UnattendedInstallConfig`: what `machine.install` was.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct UnattendedInstall {
    pub installer: Installer,
    pub provisioning: Provisioning,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Installer {
    pub image: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Provisioning {
    pub disk_selector: Option<Value>,
}

/// The v1.14 documents of a config the emulation reads, each checked.
#[derive(Debug, Default)]
pub struct Multidoc {
    pub cluster: Option<KubeCluster>,
    pub node: Option<KubeNode>,
    pub kubelet: Option<Component>,
    pub api_server: Option<Component>,
    pub controller_manager: Option<Component>,
    pub scheduler: Option<Component>,
    pub proxy: Option<Component>,
    pub core_dns: Option<Component>,
    pub network: Option<KubeNetwork>,
    pub api_server_ca: Option<KubeApiServerCa>,
    pub identity: Option<DiscoveryIdentity>,
    pub install: Option<UnattendedInstall>,
    /// In document order.
    pub inline_manifests: Vec<InlineManifest>,
}

fn rule(document: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::invalid(document, reason)
}

/// A component document's image, which it must name unless it is off.
fn component(kind: &str, value: Value, what: &str) -> Result<Component, ConfigError> {
    let doc: Component = typed(value, kind)?;
    if doc.is_enabled() && non_empty(doc.image.as_ref()).is_none() {
        return Err(rule(kind, format!("{what} image cannot be empty")));
    }
    Ok(doc)
}

/// The PEM blocks of `text`, all of type `wanted` (when given), as Talos'
/// `AssertValidPEM` wants them.
fn assert_pem(text: &str, wanted: Option<&str>) -> Result<(), String> {
    let blocks = pem::parse_many(text).unwrap_or_default();
    if let Some(block) = blocks.iter().find(|b| wanted.is_some_and(|w| b.tag() != w)) {
        let wanted = wanted.unwrap_or_default();
        return Err(format!(
            "unexpected PEM block type {:?}, expected one of [{wanted:?}]",
            block.tag()
        ));
    }
    if blocks.is_empty() {
        return Err("no PEM blocks found".into());
    }
    Ok(())
}

fn check_api_server_ca(doc: &KubeApiServerCa) -> Result<(), String> {
    if let Some(issuing) = &doc.issuing_ca {
        let cert = non_empty(issuing.cert.as_ref()).ok_or("issuing CA: certificate is required")?;
        let key = non_empty(issuing.key.as_ref()).ok_or("issuing CA: key is required")?;
        assert_pem(cert, Some("CERTIFICATE"))
            .map_err(|e| format!("issuing CA: certificate: {e}"))?;
        assert_pem(key, None).map_err(|e| format!("issuing CA: key: {e}"))?;
    }
    for (i, ca) in doc.accepted_cas.iter().enumerate() {
        assert_pem(ca, Some("CERTIFICATE")).map_err(|e| format!("accepted CA #{i}: {e}"))?;
    }
    Ok(())
}

/// Kubernetes' DNS-1123 subdomain, as an inline manifest's name must be.
fn check_subdomain(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err(format!("domain name length exceeds limit of 253: {name:?}"));
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    if !name.split('.').all(label_ok) {
        return Err(format!("domain doesn't match required format: {name:?}"));
    }
    Ok(())
}

fn check_identity(doc: &DiscoveryIdentity) -> Result<(), String> {
    non_empty(doc.cluster_id.as_ref()).ok_or("clusterID is required")?;
    let secret = doc
        .cluster_secret
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or("clusterSecret is required")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(secret)
        .map_err(|e| {
            let at = match e {
                base64::DecodeError::InvalidByte(at, _)
                | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                _ => secret.len(),
            };
            format!(
                "invalid clusterSecret: failed to decode from base64: {secret}; \
                 illegal base64 data at input byte {at}"
            )
        })?;
    if decoded.len() != 32 {
        return Err(format!(
            "invalid clusterSecret: expected 32 bytes, got {}: {secret}",
            decoded.len()
        ));
    }
    Ok(())
}

fn check_install(doc: &UnattendedInstall) -> Result<(), String> {
    let selected = doc
        .provisioning
        .disk_selector
        .as_ref()
        .and_then(|s| s.get("match"))
        .and_then(Value::as_str)
        .is_some_and(|m| !m.trim().is_empty());
    if !selected {
        return Err("provisioning.volumeSelector.match is required".into());
    }
    Ok(())
}

impl Multidoc {
    /// Reads the documents of the kinds the emulation acts on from
    /// `documents` (kind, document), in order; others are left alone.
    pub fn read(documents: &[(String, Value)]) -> Result<Self, ConfigError> {
        let mut out = Self::default();
        for (kind, value) in documents {
            let kind = kind.as_str();
            let value = value.clone();
            let checked = |result: Result<(), String>| result.map_err(|e| rule(kind, e));
            match kind {
                "KubeClusterConfig" => {
                    let doc: KubeCluster = typed(value, kind)?;
                    if non_empty(doc.cluster_name.as_ref()).is_none() {
                        return Err(rule(kind, "clusterName must be specified"));
                    }
                    if non_empty(doc.endpoint.as_ref()).is_none() {
                        return Err(rule(kind, "endpoint must be specified"));
                    }
                    out.cluster = Some(doc);
                }
                "KubeNodeConfig" => out.node = Some(typed(value, kind)?),
                "KubeletConfig" => out.kubelet = Some(component(kind, value, "kubelet")?),
                "KubeAPIServerConfig" => {
                    out.api_server = Some(component(kind, value, "kube-apiserver")?);
                }
                "KubeControllerManagerConfig" => {
                    out.controller_manager =
                        Some(component(kind, value, "kube-controller-manager")?);
                }
                "KubeSchedulerConfig" => {
                    out.scheduler = Some(component(kind, value, "scheduler")?);
                }
                "KubeProxyConfig" => {
                    let doc = component(kind, value, "proxy")?;
                    match doc.mode.as_deref().unwrap_or_default() {
                        "" | "nftables" | "iptables" | "ipvs" => {}
                        _ if !doc.is_enabled() => {}
                        other => {
                            return Err(rule(
                                kind,
                                format!(
                                    "invalid proxy mode {other:?}: supported modes are \
                                     iptables, ipvs and nftables"
                                ),
                            ));
                        }
                    }
                    out.proxy = Some(doc);
                }
                "KubeCoreDNSConfig" => out.core_dns = Some(typed(value, kind)?),
                "KubeNetworkConfig" => {
                    let doc: KubeNetwork = typed(value, kind)?;
                    checked(check_kube_network(&doc))?;
                    out.network = Some(doc);
                }
                "KubeAPIServerCAConfig" => {
                    let doc: KubeApiServerCa = typed(value, kind)?;
                    checked(check_api_server_ca(&doc))?;
                    out.api_server_ca = Some(doc);
                }
                "KubeInlineManifestConfig" => {
                    let doc: InlineManifest = typed(value, kind)?;
                    let id = format!("{kind}/{}", doc.name);
                    if doc.name.is_empty() {
                        return Err(rule(&id, "manifest name is required"));
                    }
                    check_subdomain(&doc.name)
                        .map_err(|e| rule(&id, format!("manifest name is invalid: {e}")))?;
                    out.inline_manifests.push(doc);
                }
                "KubeEtcdEncryptionConfig" => {
                    let empty = value
                        .get("config")
                        .and_then(Value::as_mapping)
                        .is_none_or(|m| m.is_empty());
                    if empty {
                        return Err(rule(kind, "etcd encryption config is required"));
                    }
                }
                "DiscoveryIdentityConfig" => {
                    let doc: DiscoveryIdentity = typed(value, kind)?;
                    checked(check_identity(&doc))?;
                    out.identity = Some(doc);
                }
                "UnattendedInstallConfig" => {
                    let doc: UnattendedInstall = typed(value, kind)?;
                    checked(check_install(&doc))?;
                    out.install = Some(doc);
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(kind: &str, yaml: &str) -> Result<Multidoc, String> {
        let value: Value = serde_yaml_ng::from_str(yaml).unwrap();
        Multidoc::read(&[(kind.to_string(), value)]).map_err(|e| e.to_string())
    }

    #[test]
    fn documents_are_checked_as_talos_validates_them() {
        let cases = [
            (
                "KubeClusterConfig",
                "endpoint: https://x:6443",
                "KubeClusterConfig: clusterName must be specified",
            ),
            (
                "KubeClusterConfig",
                "clusterName: c",
                "KubeClusterConfig: endpoint must be specified",
            ),
            (
                "KubeletConfig",
                "{}",
                "KubeletConfig: kubelet image cannot be empty",
            ),
            (
                "KubeSchedulerConfig",
                "image: ''",
                "KubeSchedulerConfig: scheduler image cannot be empty",
            ),
            (
                "KubeProxyConfig",
                "{image: x, mode: userspace}",
                "KubeProxyConfig: invalid proxy mode \"userspace\": supported modes are \
                 iptables, ipvs and nftables",
            ),
            (
                "KubeAPIServerCAConfig",
                "issuingCA: {cert: x}",
                "KubeAPIServerCAConfig: issuing CA: key is required",
            ),
            (
                "KubeAPIServerCAConfig",
                "acceptedCAs: [nope]",
                "KubeAPIServerCAConfig: accepted CA #0: no PEM blocks found",
            ),
            (
                "KubeInlineManifestConfig",
                "{name: Cilium, manifest: ''}",
                "KubeInlineManifestConfig/Cilium: manifest name is invalid: domain doesn't \
                 match required format: \"Cilium\"",
            ),
            (
                "KubeEtcdEncryptionConfig",
                "config: {}",
                "KubeEtcdEncryptionConfig: etcd encryption config is required",
            ),
            (
                "DiscoveryIdentityConfig",
                "{clusterID: a, clusterSecret: c2hvcnQ=}",
                "DiscoveryIdentityConfig: invalid clusterSecret: expected 32 bytes, got 5: c2hvcnQ=",
            ),
            (
                "UnattendedInstallConfig",
                "installer: {image: x}",
                "UnattendedInstallConfig: provisioning.volumeSelector.match is required",
            ),
        ];
        for (kind, yaml, expected) in cases {
            assert_eq!(read(kind, yaml).unwrap_err(), expected, "{kind} {yaml}");
        }
        let off = read("KubeProxyConfig", "enabled: false").unwrap();
        assert!(!off.proxy.unwrap().is_enabled(), "no image needed when off");
        let dns = read("KubeCoreDNSConfig", "enabled: true").unwrap();
        assert!(
            dns.core_dns.unwrap().image.is_none(),
            "Talos' default image"
        );
    }
}
