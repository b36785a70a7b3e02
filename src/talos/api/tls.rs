//! How hct trusts a Talos node, and how the node trusts hct.
//!
//! - Maintenance mode (first boot, no config yet): the node presents a
//!   self-signed certificate that nothing can vouch for. hct accepts it, or —
//!   when the caller knows it — only a certificate whose public key has the
//!   pinned SHA-256 fingerprint. No client certificate is sent.
//! - Configured: the node's certificate must chain to the cluster's OS CA and
//!   name the node's IP; hct presents the `os:admin` client certificate.
//!
//! The client config for a trust is built once per process
//! ([`shared_client_config`]): a refresh that reads a hundred nodes with one
//! cluster's credentials parses them once, not per node.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use base64::Engine;
use rustls::client::Resumption;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

use super::error::TalosError;
use crate::secret::Secret;

/// The credentials of the cluster's administrator (from the talosconfig).
#[derive(Clone)]
pub struct AdminCredentials {
    /// PEM of the OS CA certificate.
    pub os_ca: String,
    /// PEM of the admin client certificate (Ed25519, `O=os:admin`).
    pub certificate: String,
    /// PEM of its key. Talos labels Ed25519 keys `ED25519 PRIVATE KEY`; the
    /// contents are PKCS#8 all the same.
    pub key: Secret,
}

/// Which certificates to accept from the node.
#[derive(Clone)]
pub enum Trust {
    Maintenance {
        /// SHA-256 of the node certificate's SubjectPublicKeyInfo.
        pinned_spki_sha256: Option<[u8; 32]>,
    },
    Admin(AdminCredentials),
}

/// Parses a fingerprint given as hex or base64.
pub fn parse_fingerprint(text: &str) -> Option<[u8; 32]> {
    let text = text.trim().trim_start_matches("sha256:");
    let bytes = if text.len() == 64 && text.chars().all(|c| c.is_ascii_hexdigit()) {
        (0..32)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
            .collect::<Option<Vec<u8>>>()?
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?
    };
    bytes.try_into().ok()
}

/// The SHA-256 fingerprint of a certificate's SubjectPublicKeyInfo.
pub fn spki_fingerprint(certificate: &[u8]) -> Option<[u8; 32]> {
    crate::der::subject_public_key_info(certificate).map(|spki| Sha256::digest(spki).into())
}

/// Client configs built in this process, by the SHA-256 of what they trust.
static BUILT: LazyLock<Mutex<HashMap<[u8; 32], Arc<ClientConfig>>>> =
    LazyLock::new(Default::default);
/// Each operation issues its own client certificate: past this many, the
/// cache starts over rather than grow for the whole of a long apply.
const BUILT_MAX: usize = 64;

fn built() -> MutexGuard<'static, HashMap<[u8; 32], Arc<ClientConfig>>> {
    BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What identifies a trust's client config (a digest: the key stays out).
fn trust_digest(trust: &Trust) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(bytes);
    };
    match trust {
        Trust::Maintenance { pinned_spki_sha256 } => {
            part(b"maintenance");
            part(pinned_spki_sha256.as_ref().map_or(&[][..], |p| &p[..]));
        }
        Trust::Admin(credentials) => {
            part(b"admin");
            part(credentials.os_ca.as_bytes());
            part(credentials.certificate.as_bytes());
            part(credentials.key.expose().as_bytes());
        }
    }
    hasher.finalize().into()
}

/// [`client_config`], built once per trust in this process and shared.
pub fn shared_client_config(trust: &Trust) -> Result<Arc<ClientConfig>, TalosError> {
    let digest = trust_digest(trust);
    if let Some(config) = built().get(&digest) {
        return Ok(config.clone());
    }
    let config = Arc::new(client_config(trust)?);
    let mut built = built();
    if built.len() >= BUILT_MAX {
        built.clear();
    }
    built.insert(digest, config.clone());
    Ok(config)
}

pub fn client_config(trust: &Trust) -> Result<ClientConfig, TalosError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TalosError::Credentials(e.to_string()))?;
    let mut config = match trust {
        Trust::Maintenance { pinned_spki_sha256 } => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(MaintenanceVerifier {
                pinned: *pinned_spki_sha256,
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth(),
        Trust::Admin(credentials) => {
            let mut roots = RootCertStore::empty();
            for ca in CertificateDer::pem_slice_iter(credentials.os_ca.as_bytes()) {
                let ca = ca.map_err(|_| {
                    TalosError::Credentials("the OS CA is not a PEM certificate".into())
                })?;
                roots.add(ca).map_err(|e| {
                    TalosError::Credentials(format!("the OS CA is not usable: {e}"))
                })?;
            }
            let chain = CertificateDer::pem_slice_iter(credentials.certificate.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| TalosError::Credentials("the admin certificate is not PEM".into()))?;
            builder
                .with_root_certificates(roots)
                .with_client_auth_cert(chain, private_key(&credentials.key)?)
                .map_err(|e| {
                    TalosError::Credentials(format!(
                        "the admin key does not fit its certificate: {e}"
                    ))
                })?
        }
    };
    // apid is a gRPC server: HTTP/2 only.
    config.alpn_protocols = vec![b"h2".to_vec()];
    // Every connection makes a full handshake, as before configs were
    // shared: how a node answers one (a certificate it asks for or not, the
    // CA it chains to) is what tells maintenance mode from configured.
    config.resumption = Resumption::disabled();
    Ok(config)
}

/// Reads a PEM private key whatever its label says (Talos' Ed25519 keys
/// carry the non-standard `ED25519 PRIVATE KEY`).
fn private_key(pem: &Secret) -> Result<PrivateKeyDer<'static>, TalosError> {
    if let Ok(key) = PrivateKeyDer::from_pem_slice(pem.expose().as_bytes()) {
        return Ok(key);
    }
    let body: String = pem
        .expose()
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .map_err(|_| TalosError::Credentials("the admin key is not PEM".into()))?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)))
}

/// Accepts the node's self-signed maintenance certificate, or only the pinned one.
#[derive(Debug)]
struct MaintenanceVerifier {
    pinned: Option<[u8; 32]>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for MaintenanceVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.pinned {
            None => Ok(ServerCertVerified::assertion()),
            Some(pinned) if spki_fingerprint(end_entity) == Some(pinned) => {
                Ok(ServerCertVerified::assertion())
            }
            Some(_) => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_as_hex_or_base64() {
        let bytes = [0xabu8; 32];
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(parse_fingerprint(&hex), Some(bytes));
        assert_eq!(parse_fingerprint(&format!("sha256:{hex}")), Some(bytes));
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert_eq!(parse_fingerprint(&b64), Some(bytes));
        assert_eq!(parse_fingerprint("abcd"), None);
    }

    #[test]
    fn reads_ed25519_keys_with_the_talos_label() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let talos_pem = key
            .serialize_pem()
            .replace("PRIVATE KEY", "ED25519 PRIVATE KEY");
        let parsed = private_key(&Secret::new(talos_pem)).unwrap();
        assert_eq!(parsed.secret_der(), key.serialize_der().as_slice());
    }

    #[test]
    fn client_configs_are_shared_per_trust() {
        let pinned = |byte| Trust::Maintenance {
            pinned_spki_sha256: Some([byte; 32]),
        };
        let unpinned = Trust::Maintenance {
            pinned_spki_sha256: None,
        };
        let first = shared_client_config(&pinned(1)).unwrap();
        assert!(Arc::ptr_eq(
            &first,
            &shared_client_config(&pinned(1)).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            &first,
            &shared_client_config(&pinned(2)).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            &first,
            &shared_client_config(&unpinned).unwrap()
        ));
        assert_eq!(first.alpn_protocols, vec![b"h2".to_vec()]);
    }
}
