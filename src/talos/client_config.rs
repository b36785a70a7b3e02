//! The admin's client configs, made offline from the secrets bundle:
//! - talosconfig: a context named after the cluster, the control-plane IPs
//!   as endpoints and nodes, the OS CA, and an `os:admin` client
//!   certificate (Ed25519, signed by the OS CA), as `talosctl gen config`
//!   makes it;
//! - admin kubeconfig: the cluster endpoint, the Kubernetes CA and a
//!   `CN=admin, O=system:masters` client certificate (ECDSA P-256, signed by
//!   the Kubernetes CA), as Talos' `kubeconfig` API makes it.
//!
//! Both certificates are valid for a year; [`ClientConfig::expires`] says
//! until when, so they can be renewed in time. A kubeconfig of shorter life
//! ([`admin_kubeconfig_valid_for`]) serves `hct_kubeconfig`, and
//! [`kubeconfig_credentials`] takes any of them apart into the four values
//! the helm and kubernetes providers are configured with.

use std::fmt;
use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::KeyUsagePurpose;
use serde_json::json;

use super::Secrets;
use super::config::is_cluster_name;
use super::pki::{ClientCertificateRequest, IssuedCertificate, KeyAlgorithm, PkiError};
use super::yaml;
use crate::network_plan::NetworkPlan;

/// How long admin client certificates last (Talos: one year).
pub const ADMIN_CERTIFICATE_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);

/// A talosconfig or kubeconfig is issued again once its certificate has
/// less than this left, so it never lapses between two applies a month apart.
pub const RENEWAL_WINDOW: Duration = Duration::from_secs(30 * 24 * 3600);

/// Talos API role of the talosconfig certificate.
const TALOS_ADMIN_ROLE: &str = "os:admin";
/// Kubernetes user and group of the kubeconfig certificate.
const KUBERNETES_ADMIN_USER: &str = "admin";
const KUBERNETES_ADMIN_GROUP: &str = "system:masters";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientConfigError {
    #[error(
        "invalid cluster_name {0:?}: must be 1-63 characters [a-z0-9-], starting and ending alphanumeric"
    )]
    InvalidClusterName(String),
    #[error("could not issue the {what} client certificate: {source}")]
    Certificate {
        what: &'static str,
        #[source]
        source: PkiError,
    },
}

/// A client config (YAML with a private key) and when its certificate
/// expires. Debug output shows the expiry only.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientConfig {
    contents: String,
    expires: SystemTime,
}

impl ClientConfig {
    pub fn as_str(&self) -> &str {
        &self.contents
    }

    pub fn into_string(self) -> String {
        self.contents
    }

    /// The client certificate's not-after time.
    pub fn expires(&self) -> SystemTime {
        self.expires
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

/// When the client certificate of a talosconfig or kubeconfig (as hct
/// writes them) expires; None if the text holds none.
pub fn client_certificate_expiry(config: &str) -> Option<SystemTime> {
    let document = yaml::parse_documents(config).ok()?.into_iter().next()?;
    let encoded = match talos_context(&document) {
        Some((_, context)) => context.get("crt")?,
        // kubeconfig: the first user's certificate.
        None => document
            .get("users")?
            .get(0)?
            .get("user")?
            .get("client-certificate-data")?,
    };
    let pem = STANDARD.decode(encoded.as_str()?).ok()?;
    super::pki::certificate_not_after(std::str::from_utf8(&pem).ok()?).ok()
}

/// What hct's own calls take from a talosconfig as hct writes it: its
/// cluster (the current context), the control planes (the context's
/// nodes) and the admin's credentials.
#[derive(Debug)]
pub struct TalosconfigAccess {
    pub cluster: String,
    pub nodes: Vec<std::net::Ipv4Addr>,
    pub credentials: ApiCredentials,
}

/// The talosconfig taken apart; None if it is not one hct could have
/// written (no current context, a node that is no IPv4 address, a PEM
/// that is not base64).
pub fn talosconfig_access(config: &str) -> Option<TalosconfigAccess> {
    let document = yaml::parse_documents(config).ok()?.into_iter().next()?;
    let (cluster, context) = talos_context(&document)?;
    let cluster = cluster.to_string();
    let nodes = context
        .get("nodes")?
        .as_array()?
        .iter()
        .map(|n| n.as_str()?.parse().ok())
        .collect::<Option<Vec<_>>>()?;
    let pem = |key: &str| -> Option<String> {
        let bytes = STANDARD.decode(context.get(key)?.as_str()?).ok()?;
        String::from_utf8(bytes).ok()
    };
    Some(TalosconfigAccess {
        cluster,
        nodes,
        credentials: ApiCredentials {
            ca: pem("ca")?,
            certificate: pem("crt")?,
            key: pem("key")?,
        },
    })
}

/// A talosconfig's current context: its name and its map (contexts is a
/// map there, the current one named by `context`); None for a kubeconfig.
fn talos_context(document: &serde_json::Value) -> Option<(&str, &serde_json::Value)> {
    let contexts = document.get("contexts")?.as_object()?;
    let current = document.get("context")?.as_str()?;
    Some((current, contexts.get(current)?))
}

/// Whether a client config should be issued again: its certificate expires
/// within [`RENEWAL_WINDOW`] of `now`, or has expired.
pub fn due_for_renewal(config: &str, now: SystemTime) -> bool {
    client_certificate_expiry(config).is_some_and(|expires| expires < now + RENEWAL_WINDOW)
}

/// talosconfig for `talosctl`.
pub fn talosconfig(
    cluster_name: &str,
    plan: &NetworkPlan,
    secrets: &Secrets,
) -> Result<ClientConfig, ClientConfigError> {
    talosconfig_at(cluster_name, plan, secrets, SystemTime::now())
}

/// A talosconfig as issued at `now`.
pub fn talosconfig_at(
    cluster_name: &str,
    plan: &NetworkPlan,
    secrets: &Secrets,
    now: SystemTime,
) -> Result<ClientConfig, ClientConfigError> {
    check_cluster_name(cluster_name)?;
    let certificate = issue(
        secrets.os_ca(),
        "Talos admin",
        talos_admin(ADMIN_CERTIFICATE_VALIDITY),
        now,
    )?;
    let control_plane: Vec<String> = plan
        .control_plane()
        .ips
        .iter()
        .map(ToString::to_string)
        .collect();
    let document = json!({
        "context": cluster_name,
        "contexts": {
            cluster_name: {
                "endpoints": control_plane,
                "nodes": control_plane,
                "ca": STANDARD.encode(secrets.os_ca().certificate_pem()),
                "crt": STANDARD.encode(&certificate.cert_pem),
                "key": STANDARD.encode(certificate.key.as_pem()),
            },
        },
    });
    Ok(ClientConfig {
        contents: yaml::to_string(&[document]),
        expires: certificate.not_after,
    })
}

/// An admin kubeconfig that works before the cluster is up.
pub fn admin_kubeconfig(
    cluster_name: &str,
    plan: &NetworkPlan,
    secrets: &Secrets,
) -> Result<ClientConfig, ClientConfigError> {
    admin_kubeconfig_at(cluster_name, plan, secrets, SystemTime::now())
}

/// An admin kubeconfig as issued at `now`.
pub fn admin_kubeconfig_at(
    cluster_name: &str,
    plan: &NetworkPlan,
    secrets: &Secrets,
    now: SystemTime,
) -> Result<ClientConfig, ClientConfigError> {
    admin_kubeconfig_valid_for(cluster_name, plan, secrets, now, ADMIN_CERTIFICATE_VALIDITY)
}

/// An admin kubeconfig issued at `now` whose certificate lasts `validity`.
pub fn admin_kubeconfig_valid_for(
    cluster_name: &str,
    plan: &NetworkPlan,
    secrets: &Secrets,
    now: SystemTime,
    validity: Duration,
) -> Result<ClientConfig, ClientConfigError> {
    check_cluster_name(cluster_name)?;
    let certificate = issue(
        secrets.kubernetes_ca(),
        "Kubernetes admin",
        kubernetes_admin(validity),
        now,
    )?;
    let user = format!("{KUBERNETES_ADMIN_USER}@{cluster_name}");
    let document = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": cluster_name,
            "cluster": {
                "server": plan.cluster_endpoint(),
                "certificate-authority-data": STANDARD.encode(secrets.kubernetes_ca().certificate_pem()),
            },
        }],
        "users": [{
            "name": user,
            "user": {
                "client-certificate-data": STANDARD.encode(&certificate.cert_pem),
                "client-key-data": STANDARD.encode(certificate.key.as_pem()),
            },
        }],
        "contexts": [{
            "name": user,
            "context": {"cluster": cluster_name, "namespace": "default", "user": user},
        }],
        "current-context": user,
        "preferences": {},
    });
    Ok(ClientConfig {
        contents: yaml::to_string(&[document]),
        expires: certificate.not_after,
    })
}

/// What a Kubernetes client is configured with, as PEM text: the API
/// server's URL, the CA its certificate chains to, and the admin's client
/// certificate and key (secret). Debug output shows the host only.
#[derive(Clone, PartialEq, Eq)]
pub struct KubeconfigCredentials {
    pub host: String,
    pub cluster_ca_certificate: String,
    pub client_certificate: String,
    pub client_key: String,
}

impl fmt::Debug for KubeconfigCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeconfigCredentials")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// The credentials of a kubeconfig as hct writes it (the first cluster and
/// the first user, data inline); None if the text holds no such entries.
pub fn kubeconfig_credentials(config: &str) -> Option<KubeconfigCredentials> {
    let document = yaml::parse_documents(config).ok()?.into_iter().next()?;
    let cluster = document.get("clusters")?.get(0)?.get("cluster")?;
    let user = document.get("users")?.get(0)?.get("user")?;
    let pem = |value: &serde_json::Value, key: &str| -> Option<String> {
        let decoded = STANDARD.decode(value.get(key)?.as_str()?).ok()?;
        String::from_utf8(decoded).ok()
    };
    Some(KubeconfigCredentials {
        host: cluster.get("server")?.as_str()?.to_string(),
        cluster_ca_certificate: pem(cluster, "certificate-authority-data")?,
        client_certificate: pem(user, "client-certificate-data")?,
        client_key: pem(user, "client-key-data")?,
    })
}

/// The kubeconfig with `proxy-url` set on its clusters (a SOCKS5 or HTTP
/// proxy into the private network, as kubectl reads it); None if the text
/// is not a kubeconfig.
pub fn with_proxy_url(config: &str, proxy_url: &str) -> Option<String> {
    let mut document = yaml::parse_documents(config).ok()?.into_iter().next()?;
    for cluster in document.get_mut("clusters")?.as_array_mut()? {
        cluster
            .get_mut("cluster")?
            .as_object_mut()?
            .insert("proxy-url".into(), proxy_url.into());
    }
    Some(yaml::to_string(&[document]))
}

/// A short-lived client certificate for hct's own calls (the talosconfig and
/// kubeconfig handed to the user are issued once and kept in state).
pub struct ApiCredentials {
    /// PEM of the CA the server's certificate chains to.
    pub ca: String,
    pub certificate: String,
    /// PEM of the key (secret).
    pub key: String,
}

impl fmt::Debug for ApiCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiCredentials").finish_non_exhaustive()
    }
}

impl From<ApiCredentials> for super::api::AdminCredentials {
    fn from(credentials: ApiCredentials) -> Self {
        Self {
            os_ca: credentials.ca,
            certificate: credentials.certificate,
            key: crate::secret::Secret::new(credentials.key),
        }
    }
}

/// `os:admin` credentials for the Talos API, valid for `validity` from now.
pub fn talos_api_credentials(
    secrets: &Secrets,
    validity: Duration,
) -> Result<ApiCredentials, ClientConfigError> {
    let certificate = issue(
        secrets.os_ca(),
        "Talos API",
        talos_admin(validity),
        SystemTime::now(),
    )?;
    Ok(ApiCredentials {
        ca: secrets.os_ca().certificate_pem().to_string(),
        certificate: certificate.cert_pem.clone(),
        key: certificate.key.as_pem().to_string(),
    })
}

/// `system:masters` credentials for the Kubernetes API, valid for `validity`.
pub fn kubernetes_api_credentials(
    secrets: &Secrets,
    validity: Duration,
) -> Result<ApiCredentials, ClientConfigError> {
    let certificate = issue(
        secrets.kubernetes_ca(),
        "Kubernetes API",
        kubernetes_admin(validity),
        SystemTime::now(),
    )?;
    Ok(ApiCredentials {
        ca: secrets.kubernetes_ca().certificate_pem().to_string(),
        certificate: certificate.cert_pem.clone(),
        key: certificate.key.as_pem().to_string(),
    })
}

/// Talos and Kubernetes admin credentials valid `validity` from
/// `not_before`, made from the CAs' keys and `not_before` alone (see
/// `CertificateAuthority::issue_derived`): the same each time they are asked
/// for, so a plan can carry them. For the pools (`cluster::pool_access`).
pub fn derived_api_credentials(
    secrets: &Secrets,
    not_before: SystemTime,
    validity: Duration,
) -> Result<(ApiCredentials, ApiCredentials), ClientConfigError> {
    let derived = |ca: &super::pki::CertificateAuthority, what, request| {
        let certificate = ca
            .issue_derived(&request, what, not_before)
            .map_err(|source| ClientConfigError::Certificate { what, source })?;
        Ok::<_, ClientConfigError>(ApiCredentials {
            ca: ca.certificate_pem().to_string(),
            certificate: certificate.cert_pem.clone(),
            key: certificate.key.as_pem().to_string(),
        })
    };
    Ok((
        derived(secrets.os_ca(), "Talos API", talos_admin(validity))?,
        derived(
            secrets.kubernetes_ca(),
            "Kubernetes API",
            kubernetes_admin(validity),
        )?,
    ))
}

/// The talosconfig's certificate: Talos' `os:admin` role, Ed25519.
fn talos_admin(validity: Duration) -> ClientCertificateRequest {
    ClientCertificateRequest {
        common_name: None,
        organization: TALOS_ADMIN_ROLE.into(),
        algorithm: KeyAlgorithm::Ed25519,
        key_usages: vec![KeyUsagePurpose::DigitalSignature],
        validity,
    }
}

/// The kubeconfig's certificate: `admin` in `system:masters`, ECDSA P-256.
fn kubernetes_admin(validity: Duration) -> ClientCertificateRequest {
    ClientCertificateRequest {
        common_name: Some(KUBERNETES_ADMIN_USER.into()),
        organization: KUBERNETES_ADMIN_GROUP.into(),
        algorithm: KeyAlgorithm::EcdsaP256,
        key_usages: vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ],
        validity,
    }
}

fn check_cluster_name(cluster_name: &str) -> Result<(), ClientConfigError> {
    if is_cluster_name(cluster_name) {
        Ok(())
    } else {
        Err(ClientConfigError::InvalidClusterName(
            cluster_name.to_owned(),
        ))
    }
}

fn issue(
    ca: &super::pki::CertificateAuthority,
    what: &'static str,
    request: ClientCertificateRequest,
    now: SystemTime,
) -> Result<IssuedCertificate, ClientConfigError> {
    ca.issue(&request, now)
        .map_err(|source| ClientConfigError::Certificate { what, source })
}

#[cfg(test)]
mod tests;
