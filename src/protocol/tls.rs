//! go-plugin's AutoMTLS: Terraform and the plugin each make a throwaway
//! certificate and pin the other's.
//!
//! What it authenticates: Terraform puts its client certificate in the
//! plugin's environment (`PLUGIN_CLIENT_CERT`) and reads ours from the
//! handshake line on our stdout. Both channels exist only between the parent
//! and the child process, so a connection that presents exactly that client
//! certificate (and proves it holds the key) comes from the Terraform process
//! that started us, and Terraform knows it talks to the process it started.
//! No CA or hostname is involved, so verification is by exact match.
//!
//! Terraform's client key is ECDSA P-521. rustls verifies P-521 signatures
//! only with the aws-lc-rs crypto provider, which is why hct uses it.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("PLUGIN_CLIENT_CERT does not hold a PEM certificate")]
    BadClientCert,
    #[error("could not make the plugin's certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("TLS setup failed: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The server side of AutoMTLS.
pub struct AutoMtls {
    pub config: Arc<ServerConfig>,
    /// DER of our certificate, for the handshake line.
    pub server_certificate: Vec<u8>,
}

impl AutoMtls {
    /// Sets up TLS that accepts only the client certificate in `client_cert_pem`.
    pub fn new(client_cert_pem: &str) -> Result<Self, TlsError> {
        let client_certificate = CertificateDer::from_pem_slice(client_cert_pem.as_bytes())
            .map_err(|_| TlsError::BadClientCert)?;
        let (server_certificate, server_key) = self_signed_localhost()?;

        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = PinnedClientCertificate {
            expected: client_certificate.into_owned(),
            algorithms: provider.signature_verification_algorithms,
        };
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(Arc::new(verifier))
            .with_single_cert(
                vec![CertificateDer::from(server_certificate.clone())],
                server_key,
            )?;
        // gRPC runs over HTTP/2, and Go's gRPC client insists on ALPN saying so.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Self {
            config: Arc::new(config),
            server_certificate,
        })
    }
}

/// A certificate like the one go-plugin makes: self-signed, for "localhost",
/// usable as its own CA because Terraform adds it to its root pool.
fn self_signed_localhost() -> Result<(Vec<u8>, PrivateKeyDer<'static>), TlsError> {
    use rcgen::{
        BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "hct");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let certificate = params.self_signed(&key)?;
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Ok((certificate.der().to_vec(), key_der))
}

/// Accepts exactly one client certificate. Terraform's certificate is
/// self-signed and marked as a CA, which path-building verifiers reject as an
/// end entity; pinning the exact bytes is both simpler and stricter.
#[derive(Debug)]
struct PinnedClientCertificate {
    expected: CertificateDer<'static>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for PinnedClientCertificate {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.expected.as_ref() {
            Ok(ClientCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
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

/// Keeps the crypto provider choice in one place for tests.
pub fn crypto_provider() -> CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_the_pinned_certificate_and_offers_p521() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
        let client = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let other = rcgen::CertificateParams::new(vec!["other".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let verifier = PinnedClientCertificate {
            expected: client.der().clone(),
            algorithms: crypto_provider().signature_verification_algorithms,
        };
        let now = UnixTime::now();
        assert!(verifier.verify_client_cert(client.der(), &[], now).is_ok());
        assert!(verifier.verify_client_cert(other.der(), &[], now).is_err());
        assert!(
            verifier
                .supported_verify_schemes()
                .contains(&SignatureScheme::ECDSA_NISTP521_SHA512)
        );
    }

    #[test]
    fn builds_a_server_config_from_a_pem_client_certificate() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let client = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let mtls = AutoMtls::new(&client.pem()).unwrap();
        assert_eq!(mtls.config.alpn_protocols, vec![b"h2".to_vec()]);
        assert!(!mtls.server_certificate.is_empty());
        assert!(matches!(
            AutoMtls::new("not a pem"),
            Err(TlsError::BadClientCert)
        ));
    }
}
