//! The cluster's secrets bundle: everything a Talos cluster shares, made the
//! way `talosctl gen secrets` makes it, and read from / written to its
//! `secrets.yaml` (`file`) so clusters made by talosctl or the Talos
//! Terraform provider can be adopted.
//!
//! - cluster id (32 random bytes, URL-safe base64) and secret (32 bytes,
//!   base64), used by cluster discovery;
//! - the Kubernetes bootstrap token and trustd's token (`token`);
//! - the secretbox key that encrypts Kubernetes secrets at rest (32 bytes,
//!   base64), or the AES-CBC key of clusters made before Talos 1.3;
//! - the OS (Talos API), etcd, Kubernetes and aggregator CAs (`pki`);
//! - the service-account signing key: RSA-4096, as Talos makes it for every
//!   contract hct supports (≥ v1.7; older clusters' ECDSA keys are read too).

mod file;
mod join;
mod token;

pub use join::{JoinSecrets, NodeSecrets};

use std::fmt;
use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

use super::pki::{CaKind, CertificateAuthority, KeyAlgorithm, PkiError, PrivateKeyPem};
use super::yaml::YamlError;

/// Why a secrets bundle could not be made or read. Names fields, never values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretsError {
    #[error("secrets.yaml: {0}")]
    Yaml(#[from] YamlError),
    #[error("secrets.yaml: {0} is missing")]
    Missing(&'static str),
    #[error("secrets.yaml: {field} {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("could not generate the {what}: {source}")]
    Generate {
        what: &'static str,
        #[source]
        source: PkiError,
    },
    #[error("the system random number generator failed")]
    Random,
}

/// How Kubernetes secrets are encrypted at rest.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum EncryptionSecret {
    /// `cluster.secretboxEncryptionSecret` (Talos ≥ 1.3).
    Secretbox(String),
    /// `cluster.aescbcEncryptionSecret`, kept for clusters made before.
    AesCbc(String),
}

/// The secrets bundle. Debug output shows no secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secrets {
    pub(crate) cluster_id: String,
    pub(crate) cluster_secret: String,
    pub(crate) bootstrap_token: String,
    pub(crate) encryption: EncryptionSecret,
    pub(crate) trustd_token: String,
    pub(crate) etcd_ca: CertificateAuthority,
    pub(crate) kubernetes_ca: CertificateAuthority,
    pub(crate) aggregator_ca: CertificateAuthority,
    pub(crate) service_account_key: PrivateKeyPem,
    pub(crate) os_ca: CertificateAuthority,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("os_ca", &self.os_ca)
            .field("kubernetes_ca", &self.kubernetes_ca)
            .finish_non_exhaustive()
    }
}

impl Secrets {
    /// A new bundle; CAs are valid for 10 years from now.
    pub fn generate() -> Result<Self, SecretsError> {
        Self::generate_at(SystemTime::now())
    }

    /// A bundle only for rendering configs to check them (a plan's patch
    /// check before the cluster's secrets exist): the same shape, but an
    /// ECDSA service-account key instead of RSA-4096, whose generation
    /// costs about a second of CPU. hct never stores it or sends it to a
    /// node.
    pub fn for_checking() -> Result<Self, SecretsError> {
        Self::generate_with(SystemTime::now(), KeyAlgorithm::EcdsaP256)
    }

    pub(crate) fn generate_at(now: SystemTime) -> Result<Self, SecretsError> {
        Self::generate_with(now, KeyAlgorithm::Rsa)
    }

    fn generate_with(now: SystemTime, service_account: KeyAlgorithm) -> Result<Self, SecretsError> {
        let ca = |kind, what| {
            CertificateAuthority::generate(kind, now)
                .map_err(|source| SecretsError::Generate { what, source })
        };
        Ok(Self {
            cluster_id: URL_SAFE.encode(random_bytes::<32>()?),
            cluster_secret: STANDARD.encode(random_bytes::<32>()?),
            bootstrap_token: token::generate()?,
            encryption: EncryptionSecret::Secretbox(STANDARD.encode(random_bytes::<32>()?)),
            trustd_token: token::generate()?,
            etcd_ca: ca(CaKind::Etcd, "etcd CA")?,
            kubernetes_ca: ca(CaKind::Kubernetes, "Kubernetes CA")?,
            aggregator_ca: ca(CaKind::KubernetesAggregator, "Kubernetes aggregator CA")?,
            service_account_key: PrivateKeyPem::generate(service_account).map_err(|e| {
                SecretsError::Generate {
                    what: "service-account key",
                    source: e.into(),
                }
            })?,
            os_ca: ca(CaKind::Os, "OS CA")?,
        })
    }

    /// Reads talosctl's `secrets.yaml` (`talosctl gen secrets`).
    pub fn from_yaml(text: &str) -> Result<Self, SecretsError> {
        file::read(text)
    }

    /// Writes talosctl's `secrets.yaml`.
    pub fn to_yaml(&self) -> String {
        file::write(self)
    }

    /// The Talos API CA (talosconfig's `ca`).
    pub fn os_ca(&self) -> &CertificateAuthority {
        &self.os_ca
    }

    pub fn kubernetes_ca(&self) -> &CertificateAuthority {
        &self.kubernetes_ca
    }

    pub fn etcd_ca(&self) -> &CertificateAuthority {
        &self.etcd_ca
    }

    pub fn aggregator_ca(&self) -> &CertificateAuthority {
        &self.aggregator_ca
    }

    /// The service-account key's algorithm (RSA when made by Talos ≥ 1.7).
    pub fn service_account_key_algorithm(&self) -> KeyAlgorithm {
        self.service_account_key.algorithm()
    }
}

fn random_bytes<const N: usize>() -> Result<[u8; N], SecretsError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|_| SecretsError::Random)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests;
