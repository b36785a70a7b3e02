//! A machine config as the emulated node understands it: parsed from the
//! YAML documents a client applies (or user data carries) and checked the
//! way Talos checks what the emulation relies on: the machine type, the
//! trustd token, the CAs (certificates that parse, keys that fit them and
//! only where Talos allows keys), the cluster's identity, the control plane
//! endpoint, the installer image, the hostname and the routes.

pub mod documents;

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value;

use self::documents::{
    Ca, HostnameDocument, LINK_KINDS, LegacyRoute, LinkDocument, Machine, V1Alpha1, is_known_kind,
};
use super::network::Route;
use super::pki::{self, CertificateAuthority, PkiError};
use super::secret::Secret;
use super::version::{TalosVersion, installer_version};

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
    pub routes: Vec<Route>,
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
    #[error("unknown document: apiVersion {api_version:?}, kind {kind:?}{known_by}")]
    UnknownKind {
        api_version: String,
        kind: String,
        known_by: String,
    },
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

/// The field names of one CA in the config.
struct CaFields {
    crt: &'static str,
    key: &'static str,
}

const OS_CA: CaFields = CaFields {
    crt: "machine.ca.crt",
    key: "machine.ca.key",
};
const KUBERNETES_CA: CaFields = CaFields {
    crt: "cluster.ca.crt",
    key: "cluster.ca.key",
};

/// The documents of a config, sorted by what the emulation reads of them.
#[derive(Default)]
struct Documents {
    v1alpha1: Option<Value>,
    links: Vec<(String, Value)>,
    hostname: Option<Value>,
}

fn yaml_documents(text: &str) -> Result<Vec<(usize, Value)>, ConfigError> {
    let mut out = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let number = index + 1;
        let value = Value::deserialize(document).map_err(|e| ConfigError::Yaml {
            document: number,
            reason: e.to_string(),
        })?;
        if !value.is_null() {
            out.push((number, value));
        }
    }
    Ok(out)
}

fn text_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

fn sort_documents(text: &str, talos: Option<&TalosVersion>) -> Result<Documents, ConfigError> {
    let mut documents = Documents::default();
    for (number, value) in yaml_documents(text)? {
        if !value.is_mapping() {
            return Err(ConfigError::NotAMapping { document: number });
        }
        if let Some(version) = value.get("version") {
            if version.as_str() != Some("v1alpha1") {
                return Err(ConfigError::UnknownVersion(format!("{version:?}")));
            }
            if documents.v1alpha1.replace(value).is_some() {
                return Err(ConfigError::DuplicateV1Alpha1);
            }
            continue;
        }
        let Some(kind) = text_field(&value, "kind") else {
            return Err(ConfigError::Unrecognized { document: number });
        };
        let api_version = text_field(&value, "apiVersion").unwrap_or_default();
        if api_version != "v1alpha1" || !is_known_kind(kind, talos) {
            return Err(ConfigError::UnknownKind {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                known_by: talos.map(|v| format!(" for Talos {v}")).unwrap_or_default(),
            });
        }
        let kind = kind.to_string();
        if kind == "HostnameConfig" {
            if documents.hostname.replace(value).is_some() {
                return Err(ConfigError::DuplicateHostnameConfig);
            }
        } else if LINK_KINDS.contains(&kind.as_str()) {
            documents.links.push((kind, value));
        }
    }
    Ok(documents)
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

/// A CA from the config; its key only where `control_plane`, and then it
/// must be the certificate's.
fn authority(
    ca: Option<&Ca>,
    fields: &CaFields,
    control_plane: bool,
) -> Result<CertificateAuthority, ConfigError> {
    let pki_error = |field| move |source| ConfigError::Pki { field, source };
    let crt = non_empty(ca.and_then(|c| c.crt.as_ref())).ok_or(ConfigError::Missing(fields.crt))?;
    let certificate = pki::decode_config_pem(crt).map_err(pki_error(fields.crt))?;
    let der = pki::certificate_der(&certificate).map_err(pki_error(fields.crt))?;
    let key = match (non_empty(ca.and_then(|c| c.key.as_ref())), control_plane) {
        (None, true) => return Err(ConfigError::Missing(fields.key)),
        (Some(_), false) => return Err(ConfigError::KeyOnWorker(fields.key)),
        (None, false) => None,
        (Some(key), true) => {
            let pem = pki::decode_config_pem(key).map_err(pki_error(fields.key))?;
            let pair = pki::key_pair(&pem).map_err(pki_error(fields.key))?;
            pki::check_key_matches(&der, &pair).map_err(pki_error(fields.key))?;
            Some(Secret::new(pem))
        }
    };
    Ok(CertificateAuthority { certificate, key })
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

fn is_hostname(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The hostname from `machine.network.hostname` or the `HostnameConfig`
/// document, which Talos v1.12 does not let both set.
fn hostname(machine: &Machine, document: Option<Value>) -> Result<Option<String>, ConfigError> {
    let legacy = non_empty(machine.network.as_ref().and_then(|n| n.hostname.as_ref()));
    let stable = machine
        .features
        .as_ref()
        .and_then(|f| f.stable_hostname)
        .unwrap_or(false);
    let from_document = match document {
        None => None,
        Some(value) => {
            const DOC: &str = "HostnameConfig";
            let doc: HostnameDocument = typed(value, DOC)?;
            let named = non_empty(doc.hostname.as_ref());
            match (doc.auto.as_deref(), named) {
                (Some("stable"), Some(_)) => {
                    return Err(ConfigError::invalid(
                        DOC,
                        "'auto' and 'hostname' cannot be set at the same time",
                    ));
                }
                (None | Some("off"), None) => {
                    return Err(ConfigError::invalid(
                        DOC,
                        "either 'auto' or 'hostname' must be set",
                    ));
                }
                (Some(other), _) if other != "stable" && other != "off" => {
                    return Err(ConfigError::invalid(
                        DOC,
                        format!("invalid value for 'auto': {other}"),
                    ));
                }
                _ => {}
            }
            if legacy.is_some() {
                return Err(ConfigError::invalid(
                    DOC,
                    "static hostname is already set in v1alpha1 config",
                ));
            }
            if stable {
                return Err(ConfigError::invalid(
                    DOC,
                    "stable hostname is already set in v1alpha1 config",
                ));
            }
            named.map(str::to_string)
        }
    };
    match from_document.or(legacy.map(str::to_string)) {
        Some(name) if !is_hostname(&name) => Err(ConfigError::invalid(
            "hostname",
            format!("invalid hostname {name:?}"),
        )),
        name => Ok(name),
    }
}

fn legacy_route(route: &LegacyRoute, field: String) -> Result<Route, ConfigError> {
    let destination = match route.network.trim() {
        "" => None,
        text => Some(text.parse::<IpNet>().map_err(|_| {
            ConfigError::invalid(
                format!("{field}.network"),
                format!("{text:?} is not a CIDR"),
            )
        })?),
    };
    let gateway = match route.gateway.trim() {
        "" => None,
        text => Some(text.parse::<IpAddr>().map_err(|_| {
            ConfigError::invalid(
                format!("{field}.gateway"),
                format!("{text:?} is not an IP address"),
            )
        })?),
    };
    if destination.is_none() && gateway.is_none() {
        return Err(ConfigError::invalid(
            field,
            "either network or gateway should be set",
        ));
    }
    Ok(Route {
        destination,
        gateway,
    })
}

/// Routes of the link documents. Talos v1.12 takes a route without a
/// destination as the default route and rejects `0.0.0.0/0` written out.
fn link_routes(kind: &str, value: Value) -> Result<Vec<Route>, ConfigError> {
    let link: LinkDocument = typed(value, kind)?;
    let name = non_empty(link.name.as_ref())
        .ok_or_else(|| ConfigError::invalid(kind, "name is required"))?
        .to_string();
    let at = |i: usize| format!("{kind} {name}: route {i}");
    link.routes
        .iter()
        .enumerate()
        .map(|(i, route)| {
            let destination = match non_empty(route.destination.as_ref()) {
                None => None,
                Some(text) => match text.parse::<IpNet>() {
                    Ok(net) if !net.addr().is_unspecified() => Some(net),
                    _ => {
                        return Err(ConfigError::invalid(
                            at(i),
                            format!(
                                "destination {text:?} must be a valid IP prefix (leave it out \
                                 for a default route)"
                            ),
                        ));
                    }
                },
            };
            let gateway = match non_empty(route.gateway.as_ref()) {
                None => None,
                Some(text) => match text.parse::<IpAddr>() {
                    Ok(ip) if !ip.is_unspecified() => Some(ip),
                    _ => {
                        return Err(ConfigError::invalid(
                            at(i),
                            format!("gateway {text:?} must be a valid IP address"),
                        ));
                    }
                },
            };
            Ok(Route {
                destination,
                gateway,
            })
        })
        .collect()
}

fn routes(machine: &Machine, links: Vec<(String, Value)>) -> Result<Vec<Route>, ConfigError> {
    let mut routes = Vec::new();
    for (i, interface) in machine
        .network
        .iter()
        .flat_map(|n| &n.interfaces)
        .enumerate()
    {
        let prefix = format!("machine.network.interfaces[{i}]");
        for (j, route) in interface.routes.iter().enumerate() {
            routes.push(legacy_route(route, format!("{prefix}.routes[{j}]"))?);
        }
        for (v, vlan) in interface.vlans.iter().enumerate() {
            for (j, route) in vlan.routes.iter().enumerate() {
                routes.push(legacy_route(
                    route,
                    format!("{prefix}.vlans[{v}].routes[{j}]"),
                )?);
            }
        }
    }
    for (kind, value) in links {
        routes.extend(link_routes(&kind, value)?);
    }
    Ok(routes)
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

    let identity = ClusterIdentity {
        id: required(cluster.id.as_ref(), "cluster.id")?,
        secret: Secret::new(required(cluster.secret.as_ref(), "cluster.secret")?),
    };
    required(cluster.token.as_ref(), "cluster.token")?;
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
        routes,
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
