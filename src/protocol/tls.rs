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
//! Terraform's client key is ECDSA P-521, which ring (hct's TLS crypto) does
//! not verify. hct checks that one signature with aws-lc-rs against the
//! pinned certificate's key: about 0.5 ms, where the RustCrypto `p521` crate
//! took 2 ms, and Terraform starts a provider three times per plan. aws-lc-rs
//! serves only this verification: as rustls' whole provider, seeding its
//! random generator would cost ~40 ms at every plugin start.

use std::sync::Arc;

use aws_lc_rs::signature::{ECDSA_P521_SHA512_ASN1, ParsedPublicKey};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("PLUGIN_CLIENT_CERT does not hold a PEM certificate")]
    BadClientCert,
    #[error("PLUGIN_CLIENT_CERT holds a certificate whose key hct cannot read")]
    BadClientKey,
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

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = PinnedClientCertificate::new(
            client_certificate.into_owned(),
            provider.signature_verification_algorithms,
        )?;
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
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
struct PinnedClientCertificate {
    expected: CertificateDer<'static>,
    /// The pinned certificate's key when it is P-521 (Terraform's case).
    p521_key: Option<ParsedPublicKey>,
    /// ring's algorithms, for any other key type.
    algorithms: WebPkiSupportedAlgorithms,
}

impl std::fmt::Debug for PinnedClientCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedClientCertificate")
            .field("p521", &self.p521_key.is_some())
            .finish_non_exhaustive()
    }
}

impl PinnedClientCertificate {
    fn new(
        expected: CertificateDer<'static>,
        algorithms: WebPkiSupportedAlgorithms,
    ) -> Result<Self, TlsError> {
        let public_key = crate::der::subject_public_key(&expected).ok_or(TlsError::BadClientKey)?;
        let p521_key = ParsedPublicKey::new(&ECDSA_P521_SHA512_ASN1, public_key).ok();
        Ok(Self {
            expected,
            p521_key,
            algorithms,
        })
    }
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
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // The server speaks TLS 1.3 only.
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls13RequiredForQuic,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        if dss.scheme != SignatureScheme::ECDSA_NISTP521_SHA512 {
            return rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms);
        }
        // The certificate is the pinned one (verify_client_cert ran first).
        let bad = || rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
        let key = self
            .p521_key
            .as_ref()
            .filter(|_| cert.as_ref() == self.expected.as_ref())
            .ok_or_else(bad)?;
        key.verify_sig(message, dss.signature())
            .map_err(|_| bad())?;
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        let mut schemes = self.algorithms.supported_schemes();
        if self.p521_key.is_some() {
            schemes.insert(0, SignatureScheme::ECDSA_NISTP521_SHA512);
        }
        schemes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p521::ecdsa::signature::Signer;

    fn certificate(
        alg: &'static rcgen::SignatureAlgorithm,
    ) -> (rcgen::Certificate, rcgen::KeyPair) {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert, key)
    }

    fn verifier(expected: &CertificateDer<'static>) -> PinnedClientCertificate {
        PinnedClientCertificate::new(
            expected.clone(),
            rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
        .unwrap()
    }

    #[test]
    fn accepts_only_the_pinned_certificate() {
        let (client, _) = certificate(&rcgen::PKCS_ECDSA_P384_SHA384);
        let (other, _) = certificate(&rcgen::PKCS_ECDSA_P256_SHA256);
        let verifier = verifier(client.der());
        let now = UnixTime::now();
        assert!(verifier.verify_client_cert(client.der(), &[], now).is_ok());
        assert!(verifier.verify_client_cert(other.der(), &[], now).is_err());
        assert!(
            !verifier
                .supported_verify_schemes()
                .contains(&SignatureScheme::ECDSA_NISTP521_SHA512)
        );
    }

    /// A P-521 certificate like Terraform's, made with the p521 crate (ring
    /// cannot sign with P-521): its key is found, and a signature by it checks.
    #[test]
    fn verifies_p521_signatures_of_the_pinned_key() {
        let signing = p521::ecdsa::SigningKey::random(&mut p521::elliptic_curve::rand_core::OsRng);
        let point = p521::ecdsa::VerifyingKey::from(&signing).to_encoded_point(false);
        // A certificate-shaped DER: SEQ { SEQ { [0]v3, serial, alg, issuer, validity, subject, SPKI } }
        let spki = der_seq(&[
            &der_seq(&[
                &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01],
                &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23],
            ]),
            &der(0x03, &[&[0u8][..], point.as_bytes()].concat()),
        ]);
        let tbs = der_seq(&[
            &der(0xa0, &[2, 1, 2]),
            &[2, 1, 1],
            &der_seq(&[]),
            &der_seq(&[]),
            &der_seq(&[]),
            &der_seq(&[]),
            &spki,
        ]);
        let cert = CertificateDer::from(der_seq(&[&tbs]));
        let verifier = verifier(&cert);
        assert!(
            verifier
                .supported_verify_schemes()
                .contains(&SignatureScheme::ECDSA_NISTP521_SHA512)
        );

        let message = b"TLS 1.3, client CertificateVerify";
        // Signed by RustCrypto, checked by aws-lc-rs: two implementations agree.
        let signature: p521::ecdsa::Signature = signing.sign(message);
        let signature = signature.to_der();
        let key = verifier.p521_key.as_ref().unwrap();
        assert!(key.verify_sig(message, signature.as_bytes()).is_ok());
        assert!(
            key.verify_sig(b"something else", signature.as_bytes())
                .is_err()
        );
        assert_eq!(
            crate::der::subject_public_key(cert.as_ref()),
            Some(point.as_bytes())
        );
    }

    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        if contents.len() < 0x80 {
            out.push(contents.len() as u8);
        } else {
            out.extend_from_slice(&[0x82, (contents.len() >> 8) as u8, contents.len() as u8]);
        }
        out.extend_from_slice(contents);
        out
    }

    fn der_seq(items: &[&[u8]]) -> Vec<u8> {
        der(0x30, &items.concat())
    }

    #[test]
    fn builds_a_server_config_from_a_pem_client_certificate() {
        let (client, _) = certificate(&rcgen::PKCS_ECDSA_P256_SHA256);
        let mtls = AutoMtls::new(&client.pem()).unwrap();
        assert_eq!(mtls.config.alpn_protocols, vec![b"h2".to_vec()]);
        assert!(!mtls.server_certificate.is_empty());
        assert!(matches!(
            AutoMtls::new("not a pem"),
            Err(TlsError::BadClientCert)
        ));
    }
}
