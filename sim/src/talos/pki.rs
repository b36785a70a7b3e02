//! The certificates an emulated node deals in: reading the CAs a machine
//! config carries (base64 of PEM, as Talos writes them), and issuing the
//! apid and kube-apiserver server certificates and the admin kubeconfig's
//! client certificate.

use std::net::{IpAddr, Ipv4Addr};

use base64::Engine;
use p256::pkcs8::EncodePrivateKey;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ED25519, PublicKeyData, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::secret::Secret;

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("is not base64-encoded")]
    NotBase64,
    #[error("is not PEM")]
    NotPem,
    #[error("holds no certificate")]
    NoCertificate,
    #[error("is not an X.509 certificate: {0}")]
    BadCertificate(String),
    #[error("holds no private key that hct-sim can sign with (Ed25519, ECDSA P-256/P-384, RSA)")]
    BadKey,
    #[error("does not belong to the CA certificate")]
    KeyMismatch,
    #[error("is a certificate without its private key")]
    NoKey,
    #[error("cannot issue a certificate: {0}")]
    Issue(#[from] rcgen::Error),
}

/// A CA as a machine config carries it: PEM texts, the key only where the
/// node may sign (control planes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateAuthority {
    pub certificate: String,
    pub key: Option<Secret>,
}

/// What a TLS server presents: its certificate chain and key.
pub struct ServerIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// A certificate and its key, as PEM.
pub struct IssuedCertificate {
    pub certificate: String,
    pub key: Secret,
}

/// Decodes a config field holding base64 of PEM (`machine.ca.crt` and kin).
pub fn decode_config_pem(base64_text: &str) -> Result<String, PkiError> {
    let compact: String = base64_text.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|_| PkiError::NotBase64)?;
    let text = String::from_utf8(bytes).map_err(|_| PkiError::NotPem)?;
    if pem::parse_many(&text).map_or(true, |blocks| blocks.is_empty()) {
        return Err(PkiError::NotPem);
    }
    Ok(text)
}

/// The first certificate in a PEM text, checked to parse as X.509.
pub fn certificate_der(pem_text: &str) -> Result<CertificateDer<'static>, PkiError> {
    let blocks = pem::parse_many(pem_text).map_err(|_| PkiError::NotPem)?;
    let block = blocks
        .into_iter()
        .find(|b| b.tag() == "CERTIFICATE")
        .ok_or(PkiError::NoCertificate)?;
    x509_parser::parse_x509_certificate(block.contents())
        .map_err(|e| PkiError::BadCertificate(e.to_string()))?;
    Ok(CertificateDer::from(block.into_contents()))
}

/// A signing key from PEM. Talos labels Ed25519 keys `ED25519 PRIVATE KEY`
/// (PKCS#8 all the same) and writes ECDSA keys as SEC1 `EC PRIVATE KEY`,
/// which ring only takes as PKCS#8, so those are rewrapped.
pub fn key_pair(pem_text: &str) -> Result<KeyPair, PkiError> {
    let block = pem::parse(pem_text).map_err(|_| PkiError::NotPem)?;
    if block.tag() == "EC PRIVATE KEY" {
        let key = p256::SecretKey::from_sec1_der(block.contents()).map_err(|_| PkiError::BadKey)?;
        let pkcs8 = key.to_pkcs8_der().map_err(|_| PkiError::BadKey)?;
        return KeyPair::try_from(pkcs8.as_bytes()).map_err(|_| PkiError::BadKey);
    }
    KeyPair::try_from(block.contents()).map_err(|_| PkiError::BadKey)
}

/// Checks that `key` is the private half of the certificate's public key.
pub fn check_key_matches(certificate: &CertificateDer<'_>, key: &KeyPair) -> Result<(), PkiError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate)
        .map_err(|e| PkiError::BadCertificate(e.to_string()))?;
    if parsed.public_key().subject_public_key.data.as_ref() != key.der_bytes() {
        return Err(PkiError::KeyMismatch);
    }
    Ok(())
}

/// The subject's organizations, which Talos reads as the client's roles.
pub fn organizations(certificate: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(certificate) else {
        return Vec::new();
    };
    parsed
        .subject()
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect()
}

impl CertificateAuthority {
    fn issuer(&self) -> Result<Issuer<'static, KeyPair>, PkiError> {
        let key = key_pair(self.key.as_ref().ok_or(PkiError::NoKey)?.expose())?;
        let certificate = certificate_der(&self.certificate)?;
        Ok(Issuer::from_ca_cert_der(&certificate, key)?)
    }
}

fn pkcs8(key: &KeyPair) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()))
}

fn ip_sans(ips: &[Ipv4Addr]) -> Vec<SanType> {
    ips.iter()
        .map(|ip| SanType::IpAddress(IpAddr::V4(*ip)))
        .collect()
}

/// The self-signed certificate apid shows in maintenance mode: nothing can
/// vouch for it, it only names the node's addresses.
pub fn maintenance_identity(ips: &[Ipv4Addr]) -> Result<ServerIdentity, PkiError> {
    let key = KeyPair::generate_for(&PKCS_ED25519)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.subject_alt_names = ip_sans(ips);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let certificate = params.self_signed(&key)?;
    Ok(ServerIdentity {
        chain: vec![certificate.der().clone()],
        key: pkcs8(&key),
    })
}

/// apid's certificate once configured, issued by the cluster's OS CA for the
/// node's addresses and hostname.
pub fn node_identity(
    issuer: &CertificateAuthority,
    ips: &[Ipv4Addr],
    hostname: &str,
) -> Result<ServerIdentity, PkiError> {
    let issuer = issuer.issuer()?;
    let key = KeyPair::generate_for(&PKCS_ED25519)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, hostname.to_string());
    params.subject_alt_names = ip_sans(ips);
    if let Ok(name) = hostname.to_string().try_into() {
        params.subject_alt_names.push(SanType::DnsName(name));
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    // apid also dials other nodes when it proxies a call.
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let certificate = params.signed_by(&key, &issuer)?;
    Ok(ServerIdentity {
        chain: vec![certificate.der().clone()],
        key: pkcs8(&key),
    })
}

/// kube-apiserver's serving certificate, issued by the cluster's
/// Kubernetes CA for the node's addresses, the control plane endpoint's
/// host and the in-cluster names of the `kubernetes` service.
pub fn kube_apiserver_identity(
    ca: &CertificateAuthority,
    ips: &[Ipv4Addr],
    dns_names: &[String],
) -> Result<ServerIdentity, PkiError> {
    let (certificate, key) = kube_apiserver_certificate(ca, ips, dns_names)?;
    Ok(ServerIdentity {
        chain: vec![certificate.der().clone()],
        key: pkcs8(&key),
    })
}

/// The same certificate as PEM, for a real kube-apiserver's
/// `--tls-cert-file` and `--tls-private-key-file`.
pub fn kube_apiserver_pem(
    ca: &CertificateAuthority,
    ips: &[Ipv4Addr],
    dns_names: &[String],
) -> Result<IssuedCertificate, PkiError> {
    let (certificate, key) = kube_apiserver_certificate(ca, ips, dns_names)?;
    Ok(IssuedCertificate {
        certificate: certificate.pem(),
        key: Secret::new(key.serialize_pem()),
    })
}

fn kube_apiserver_certificate(
    ca: &CertificateAuthority,
    ips: &[Ipv4Addr],
    dns_names: &[String],
) -> Result<(rcgen::Certificate, KeyPair), PkiError> {
    let issuer = ca.issuer()?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    params.subject_alt_names = ip_sans(ips);
    for name in dns_names {
        if let Ok(name) = name.clone().try_into() {
            params.subject_alt_names.push(SanType::DnsName(name));
        }
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let certificate = params.signed_by(&key, &issuer)?;
    Ok((certificate, key))
}

/// The client certificate of an admin kubeconfig: `CN=admin`,
/// `O=system:masters`, issued by the Kubernetes CA.
pub fn kubernetes_admin(ca: &CertificateAuthority) -> Result<IssuedCertificate, PkiError> {
    client_certificate(ca, "admin", &["system:masters"])
}

/// A Kubernetes client certificate issued by the cluster's CA: the user
/// `common_name` in the groups `organizations`.
pub fn client_certificate(
    ca: &CertificateAuthority,
    common_name: &str,
    organizations: &[&str],
) -> Result<IssuedCertificate, PkiError> {
    let issuer = ca.issuer()?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    for organization in organizations {
        params
            .distinguished_name
            .push(DnType::OrganizationName, organization.to_string());
    }
    params
        .distinguished_name
        .push(DnType::CommonName, common_name.to_string());
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let certificate = params.signed_by(&key, &issuer)?;
    Ok(IssuedCertificate {
        certificate: certificate.pem(),
        key: Secret::new(key.serialize_pem()),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rcgen::{BasicConstraints, IsCa};

    /// A self-signed CA as Talos generates them (Ed25519 for the OS CA,
    /// ECDSA P-256 for Kubernetes), PEM texts.
    pub fn ca(algorithm: &'static rcgen::SignatureAlgorithm, org: &str) -> CertificateAuthority {
        let key = KeyPair::generate_for(algorithm).unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params.self_signed(&key).unwrap();
        CertificateAuthority {
            certificate: certificate.pem(),
            key: Some(Secret::new(key.serialize_pem())),
        }
    }

    /// Whether a client trusting `ca` accepts `leaf` for the node at 10.0.128.5.
    fn verifies(leaf: &CertificateDer<'_>, ca: &CertificateAuthority) -> bool {
        use rustls::client::danger::ServerCertVerifier;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(certificate_der(&ca.certificate).unwrap())
            .unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider,
        )
        .build()
        .unwrap();
        let node = rustls::pki_types::ServerName::IpAddress(Ipv4Addr::new(10, 0, 128, 5).into());
        verifier
            .verify_server_cert(leaf, &[], &node, &[], rustls::pki_types::UnixTime::now())
            .is_ok()
    }

    #[test]
    fn reads_talos_style_pem_in_base64() {
        let ca = ca(&PKCS_ED25519, "talos");
        let talos_key = ca
            .key
            .as_ref()
            .unwrap()
            .expose()
            .replace("PRIVATE KEY", "ED25519 PRIVATE KEY");
        let encoded = base64::engine::general_purpose::STANDARD.encode(&talos_key);
        let decoded = decode_config_pem(&encoded).unwrap();
        let key = key_pair(&decoded).unwrap();
        check_key_matches(&certificate_der(&ca.certificate).unwrap(), &key).unwrap();

        assert!(matches!(
            decode_config_pem("not base64!"),
            Err(PkiError::NotBase64)
        ));
        let not_pem = base64::engine::general_purpose::STANDARD.encode("hello");
        assert!(matches!(decode_config_pem(&not_pem), Err(PkiError::NotPem)));
        assert!(matches!(
            certificate_der(&talos_key),
            Err(PkiError::NoCertificate)
        ));
        let other = KeyPair::generate_for(&PKCS_ED25519).unwrap();
        assert!(matches!(
            check_key_matches(&certificate_der(&ca.certificate).unwrap(), &other),
            Err(PkiError::KeyMismatch)
        ));
    }

    #[test]
    fn reads_sec1_ecdsa_keys() {
        use p256::pkcs8::DecodePrivateKey;
        let generated = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let secret = p256::SecretKey::from_pkcs8_der(&generated.serialize_der()).unwrap();
        let sec1 = secret.to_sec1_pem(Default::default()).unwrap();
        assert!(sec1.starts_with("-----BEGIN EC PRIVATE KEY-----"));
        let key = key_pair(&sec1).unwrap();
        assert_eq!(key.algorithm(), &PKCS_ECDSA_P256_SHA256);
    }

    #[test]
    fn node_certificates_chain_to_the_os_ca_and_name_the_node() {
        let os_ca = ca(&PKCS_ED25519, "talos");
        let identity = node_identity(&os_ca, &[Ipv4Addr::new(10, 0, 128, 5)], "cp-1").unwrap();
        assert!(verifies(&identity.chain[0], &os_ca));
        let stranger = ca(&PKCS_ED25519, "talos");
        assert!(!verifies(&identity.chain[0], &stranger));
        let elsewhere = node_identity(&os_ca, &[Ipv4Addr::new(10, 0, 128, 6)], "cp-2").unwrap();
        assert!(!verifies(&elsewhere.chain[0], &os_ca), "wrong IP SAN");

        let worker_view = CertificateAuthority { key: None, ..os_ca };
        assert!(matches!(
            node_identity(&worker_view, &[], "w"),
            Err(PkiError::NoKey)
        ));
    }

    #[test]
    fn kube_apiserver_certificates_chain_to_the_kubernetes_ca() {
        let k8s_ca = ca(&PKCS_ECDSA_P256_SHA256, "kubernetes");
        let names = vec!["kubernetes".to_string(), "cp-1".to_string()];
        let identity =
            kube_apiserver_identity(&k8s_ca, &[Ipv4Addr::new(10, 0, 128, 5)], &names).unwrap();
        assert!(verifies(&identity.chain[0], &k8s_ca));
        assert!(!verifies(
            &identity.chain[0],
            &ca(&PKCS_ECDSA_P256_SHA256, "kubernetes")
        ));
        let elsewhere =
            kube_apiserver_identity(&k8s_ca, &[Ipv4Addr::new(10, 0, 128, 6)], &names).unwrap();
        assert!(!verifies(&elsewhere.chain[0], &k8s_ca), "wrong IP SAN");
    }

    #[test]
    fn admin_kubeconfig_certificates_carry_system_masters() {
        let k8s_ca = ca(&PKCS_ECDSA_P256_SHA256, "kubernetes");
        let admin = kubernetes_admin(&k8s_ca).unwrap();
        let der = certificate_der(&admin.certificate).unwrap();
        assert_eq!(organizations(&der), vec!["system:masters".to_string()]);
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
        let ca_der = certificate_der(&k8s_ca.certificate).unwrap();
        let (_, ca_parsed) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
        assert_eq!(parsed.issuer(), ca_parsed.subject());
        assert!(key_pair(admin.key.expose()).is_ok());
    }
}
