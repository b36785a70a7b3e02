//! Talos' certificate authorities and the client certificates they sign.
//!
//! Shaped like Talos' own (siderolabs/crypto): CAs are self-signed, valid
//! for 10 years from now, with key usage `digitalSignature, keyCertSign`
//! (critical), extended key usage `serverAuth, clientAuth`, basic
//! constraints `CA:TRUE` (critical), a random 128-bit serial and a subject
//! key identifier. Private keys live in `keys`, PEM framing in `pem`.

mod keys;
mod pem;

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};
use time::OffsetDateTime;
use x509_parser::certificate::X509Certificate;

pub(crate) use keys::PrivateKeyPem;
pub use keys::{KeyAlgorithm, KeyError};

/// How long Talos' CAs are valid: 87600 hours.
pub const CA_VALIDITY: Duration = Duration::from_secs(87_600 * 3600);

/// Why a certificate could not be made or read. Never carries key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PkiError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("not a PEM-encoded X.509 certificate")]
    NotCertificate,
    #[error("the certificate's public key does not belong to the private key")]
    KeyMismatch,
    #[error("the CA certificate's subject is not supported (each name part must hold one value)")]
    UnsupportedSubject,
    #[error("the system random number generator failed")]
    Random,
    #[error("could not create the certificate: {0}")]
    Signing(String),
}

/// The CAs Talos makes, with the subject and key type it gives each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaKind {
    /// Talos API (apid/trustd): `O=talos`, Ed25519.
    Os,
    /// etcd peers and clients: `O=etcd`, ECDSA P-256.
    Etcd,
    /// Kubernetes API and kubelets: `O=kubernetes`, ECDSA P-256.
    Kubernetes,
    /// The API aggregation layer (front proxy): `CN=front-proxy`, ECDSA P-256.
    KubernetesAggregator,
}

impl CaKind {
    fn subject(self) -> Result<DistinguishedName, PkiError> {
        let (kind, value) = match self {
            CaKind::Os => (DnType::OrganizationName, "talos"),
            CaKind::Etcd => (DnType::OrganizationName, "etcd"),
            CaKind::Kubernetes => (DnType::OrganizationName, "kubernetes"),
            CaKind::KubernetesAggregator => (DnType::CommonName, "front-proxy"),
        };
        let mut name = DistinguishedName::new();
        name.push(kind, printable(value)?);
        Ok(name)
    }

    fn algorithm(self) -> KeyAlgorithm {
        match self {
            CaKind::Os => KeyAlgorithm::Ed25519,
            _ => KeyAlgorithm::EcdsaP256,
        }
    }
}

/// A CA certificate and its private key, both PEM. Debug hides the key.
#[derive(Clone, PartialEq, Eq)]
pub struct CertificateAuthority {
    cert_pem: String,
    key: PrivateKeyPem,
    not_after: SystemTime,
}

impl fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("key_algorithm", &self.key.algorithm())
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// A new self-signed CA of `kind`, valid from `now` for [`CA_VALIDITY`].
    pub(crate) fn generate(kind: CaKind, now: SystemTime) -> Result<Self, PkiError> {
        let key = PrivateKeyPem::generate(kind.algorithm())?;
        let signer = key.signing_key()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = kind.subject()?;
        params.not_before = OffsetDateTime::from(now);
        params.not_after = OffsetDateTime::from(now + CA_VALIDITY);
        params.serial_number = Some(random_serial()?);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyCertSign,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params
            .self_signed(&signer)
            .map_err(|e| PkiError::Signing(e.to_string()))?;
        Self::from_pem(&cert.pem(), key.as_pem())
    }

    /// An existing CA (e.g. from a talosctl `secrets.yaml`): the certificate
    /// must parse and belong to the key.
    pub(crate) fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, PkiError> {
        let key = PrivateKeyPem::parse(key_pem)?;
        let der = certificate_der(cert_pem)?;
        let cert = parse_certificate(&der)?;
        let signer = key.signing_key()?;
        if cert.public_key().subject_public_key.data.as_ref() != signer.public_key_raw() {
            return Err(PkiError::KeyMismatch);
        }
        Ok(Self {
            cert_pem: cert_pem.to_owned(),
            not_after: not_after(&cert),
            key,
        })
    }

    pub fn certificate_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn key_algorithm(&self) -> KeyAlgorithm {
        self.key.algorithm()
    }

    /// When the CA certificate expires.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }

    pub(crate) fn key(&self) -> &PrivateKeyPem {
        &self.key
    }

    /// A new key and a client certificate for it, signed by this CA.
    pub(crate) fn issue(
        &self,
        request: &ClientCertificateRequest,
        now: SystemTime,
    ) -> Result<IssuedCertificate, PkiError> {
        let key = PrivateKeyPem::generate(request.algorithm)?;
        self.sign_client(request, key, now - CLOCK_SKEW, random_serial()?)
    }

    /// A client certificate valid from `not_before`, whose key, serial and
    /// signature follow from this CA's key, `label` and `not_before` alone:
    /// asked twice, it is the same certificate (Ed25519 signs
    /// deterministically, and ECDSA here with RFC 6979 nonces). So a plan
    /// can show it and the apply make it again.
    pub(crate) fn issue_derived(
        &self,
        request: &ClientCertificateRequest,
        label: &str,
        not_before: SystemTime,
    ) -> Result<IssuedCertificate, PkiError> {
        use sha2::{Digest, Sha256};
        let since = not_before
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let seed: [u8; 32] = Sha256::new()
            .chain_update(b"hct derived client certificate\0")
            .chain_update(label.as_bytes())
            .chain_update([0])
            .chain_update(self.key.as_pem().as_bytes())
            .chain_update(since.to_be_bytes())
            .finalize()
            .into();
        let key = PrivateKeyPem::derive(request.algorithm, &seed)?;
        let mut serial: [u8; 16] = Sha256::digest(seed)[..16].try_into().unwrap_or_default();
        serial[0] = (serial[0] & 0x7f) | 0x40;
        self.sign_client(request, key, not_before, SerialNumber::from_slice(&serial))
    }

    fn sign_client(
        &self,
        request: &ClientCertificateRequest,
        key: PrivateKeyPem,
        not_before: SystemTime,
        serial: SerialNumber,
    ) -> Result<IssuedCertificate, PkiError> {
        let ca_der = certificate_der(&self.cert_pem)?;
        ensure_single_valued_subject(&parse_certificate(&ca_der)?)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = request.subject()?;
        params.not_before = OffsetDateTime::from(not_before);
        let expires = not_before + request.validity + CLOCK_SKEW;
        params.not_after = OffsetDateTime::from(expires);
        params.serial_number = Some(serial);
        params.key_usages = request.key_usages.clone();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let subject = key.signing_key()?;
        let cert = match self.key.deterministic_signer() {
            Some(signer) => signed(&params, &subject, &ca_der, signer),
            None => signed(&params, &subject, &ca_der, self.key.signing_key()?),
        }?;
        Ok(IssuedCertificate {
            cert_pem: cert.pem(),
            key,
            not_after: whole_seconds(expires),
        })
    }
}

/// `params` for `subject`, signed by the CA of `ca_der` with `signer`.
fn signed(
    params: &CertificateParams,
    subject: &KeyPair,
    ca_der: &[u8],
    signer: impl rcgen::SigningKey,
) -> Result<rcgen::Certificate, PkiError> {
    let issuer = Issuer::from_ca_cert_der(&ca_der.into(), signer)
        .map_err(|_| PkiError::UnsupportedSubject)?;
    params
        .signed_by(subject, &issuer)
        .map_err(|e| PkiError::Signing(e.to_string()))
}

/// Client certificates start this much in the past, so a server whose clock
/// is slightly behind still accepts them (Talos does the same for kubeconfigs).
const CLOCK_SKEW: Duration = Duration::from_secs(10);

/// What a client certificate says about its holder.
#[derive(Debug, Clone)]
pub(crate) struct ClientCertificateRequest {
    pub common_name: Option<String>,
    pub organization: String,
    pub algorithm: KeyAlgorithm,
    pub key_usages: Vec<KeyUsagePurpose>,
    pub validity: Duration,
}

impl ClientCertificateRequest {
    fn subject(&self) -> Result<DistinguishedName, PkiError> {
        let mut name = DistinguishedName::new();
        name.push(DnType::OrganizationName, printable(&self.organization)?);
        if let Some(common_name) = &self.common_name {
            name.push(DnType::CommonName, printable(common_name)?);
        }
        Ok(name)
    }
}

/// A client certificate and its new private key. Debug hides the key.
#[derive(Clone)]
pub(crate) struct IssuedCertificate {
    pub cert_pem: String,
    pub key: PrivateKeyPem,
    pub not_after: SystemTime,
}

impl fmt::Debug for IssuedCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedCertificate")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// Subjects as Go writes them: PrintableString where the text allows it.
fn printable(text: &str) -> Result<DnValue, PkiError> {
    Ok(match rcgen::string::PrintableString::try_from(text) {
        Ok(printable) => DnValue::PrintableString(printable),
        Err(_) => DnValue::Utf8String(text.to_owned()),
    })
}

/// 128 random bits, like Go's serials; the top bits are fixed so the DER
/// integer is positive and minimally encoded.
fn random_serial() -> Result<SerialNumber, PkiError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| PkiError::Random)?;
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    Ok(SerialNumber::from_slice(&bytes))
}

fn certificate_der(cert_pem: &str) -> Result<Vec<u8>, PkiError> {
    match pem::decode(cert_pem) {
        Some(block) if block.label == "CERTIFICATE" => Ok(block.der),
        _ => Err(PkiError::NotCertificate),
    }
}

pub(crate) fn parse_certificate(der: &[u8]) -> Result<X509Certificate<'_>, PkiError> {
    match x509_parser::parse_x509_certificate(der) {
        Ok(([], cert)) => Ok(cert),
        _ => Err(PkiError::NotCertificate),
    }
}

/// rcgen copies the CA's subject into the issuer field and cannot express
/// (and would panic on) empty or multi-valued name parts; refuse those first.
fn ensure_single_valued_subject(cert: &X509Certificate<'_>) -> Result<(), PkiError> {
    if cert.subject().iter().all(|rdn| rdn.iter().count() == 1) {
        Ok(())
    } else {
        Err(PkiError::UnsupportedSubject)
    }
}

/// When a PEM certificate expires.
pub(crate) fn certificate_not_after(cert_pem: &str) -> Result<SystemTime, PkiError> {
    let der = certificate_der(cert_pem)?;
    Ok(not_after(&parse_certificate(&der)?))
}

fn not_after(cert: &X509Certificate<'_>) -> SystemTime {
    let seconds = cert.validity().not_after.timestamp();
    match u64::try_from(seconds) {
        Ok(seconds) => UNIX_EPOCH + Duration::from_secs(seconds),
        Err(_) => UNIX_EPOCH,
    }
}

/// X.509 times have whole seconds.
fn whole_seconds(time: SystemTime) -> SystemTime {
    match time.duration_since(UNIX_EPOCH) {
        Ok(since) => UNIX_EPOCH + Duration::from_secs(since.as_secs()),
        Err(_) => UNIX_EPOCH,
    }
}

#[cfg(test)]
mod tests;
