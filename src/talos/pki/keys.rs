//! Private keys in the PEM forms Talos writes and reads.
//!
//! Talos (via siderolabs/crypto) labels its keys by algorithm rather than
//! using plain `PRIVATE KEY`:
//! - `ED25519 PRIVATE KEY`: a PKCS#8 v1 body (RFC 8410), the OS CA's key;
//! - `EC PRIVATE KEY`: SEC1 with the curve named (Go refuses it otherwise),
//!   the etcd / Kubernetes / aggregator CAs' keys;
//! - `RSA PRIVATE KEY`: PKCS#1, the service-account key.
//!
//! Parsed keys keep their original PEM text, so an adopted bundle is written
//! back exactly as read.

use std::fmt;

use p256::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _};
use rcgen::{KeyPair, SignatureAlgorithm};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _};

use super::pem;

/// RSA modulus size for the service-account key, as Talos generates it.
const RSA_BITS: usize = 4096;

/// PKCS#8 v1 `PrivateKeyInfo` for Ed25519 up to the 32-byte seed: version 0,
/// algorithm id-Ed25519 (1.3.101.112), then the seed as OCTET STRING in an
/// OCTET STRING (RFC 8410 §7).
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// SEC1 `ECPrivateKey` for P-256 around its parts (RFC 5915): version 1, the
/// 32-byte scalar, `[0]` prime256v1 (1.2.840.10045.3.1.7), `[1]` the 65-byte
/// uncompressed public point. Fixed sizes, so fixed headers.
const SEC1_P256_HEAD: [u8; 7] = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
const SEC1_P256_CURVE_AND_POINT_HEAD: [u8; 17] = [
    0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0xa1, 0x44, 0x03, 0x42,
    0x00,
];

pub(crate) const LABEL_ED25519: &str = "ED25519 PRIVATE KEY";
pub(crate) const LABEL_EC: &str = "EC PRIVATE KEY";
pub(crate) const LABEL_RSA: &str = "RSA PRIVATE KEY";
pub(crate) const LABEL_PKCS8: &str = "PRIVATE KEY";

/// The key algorithms Talos uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAlgorithm {
    Ed25519,
    EcdsaP256,
    Rsa,
}

impl fmt::Display for KeyAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyAlgorithm::Ed25519 => "Ed25519",
            KeyAlgorithm::EcdsaP256 => "ECDSA P-256",
            KeyAlgorithm::Rsa => "RSA",
        })
    }
}

/// Why a private key could not be made or read. Never carries key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not a PEM-encoded private key")]
    NotPem,
    #[error("unsupported private key type (PEM label {0:?})")]
    UnsupportedLabel(String),
    #[error("malformed {0} private key")]
    Malformed(&'static str),
    #[error("unsupported private key algorithm in a PKCS#8 key")]
    UnsupportedAlgorithm,
    #[error("the system random number generator failed")]
    Random,
    #[error("could not generate a {0} private key")]
    Generation(KeyAlgorithm),
    #[error("could not encode a {0} private key")]
    Encoding(KeyAlgorithm),
}

/// A private key as PEM text, with its algorithm. Debug output hides it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct PrivateKeyPem {
    pem: String,
    algorithm: KeyAlgorithm,
}

impl fmt::Debug for PrivateKeyPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrivateKeyPem({}, <redacted>)", self.algorithm)
    }
}

impl PrivateKeyPem {
    /// A new key, in the form Talos writes for `algorithm`.
    pub(crate) fn generate(algorithm: KeyAlgorithm) -> Result<Self, KeyError> {
        let pem = match algorithm {
            KeyAlgorithm::Ed25519 => {
                let mut seed = [0u8; 32];
                getrandom::fill(&mut seed).map_err(|_| KeyError::Random)?;
                pem::encode(LABEL_ED25519, &ed25519_pkcs8(&seed))
            }
            KeyAlgorithm::EcdsaP256 => pem::encode(LABEL_EC, &sec1_p256(&random_p256()?)),
            KeyAlgorithm::Rsa => {
                let key = rsa::PrivateKey::new(&mut getrandom::SysRng, RSA_BITS)
                    .map_err(|_| KeyError::Generation(KeyAlgorithm::Rsa))?;
                let der = key
                    .to_pkcs1_der()
                    .map_err(|_| KeyError::Encoding(KeyAlgorithm::Rsa))?;
                pem::encode(LABEL_RSA, der.as_bytes())
            }
        };
        Ok(Self { pem, algorithm })
    }

    /// A key made from `seed` alone: the same seed gives the same key.
    /// Ed25519 takes it as its seed; P-256 hashes it to a scalar.
    pub(crate) fn derive(algorithm: KeyAlgorithm, seed: &[u8; 32]) -> Result<Self, KeyError> {
        let pem = match algorithm {
            KeyAlgorithm::Ed25519 => pem::encode(LABEL_ED25519, &ed25519_pkcs8(seed)),
            KeyAlgorithm::EcdsaP256 => pem::encode(LABEL_EC, &sec1_p256(&derived_p256(seed)?)),
            KeyAlgorithm::Rsa => return Err(KeyError::Generation(KeyAlgorithm::Rsa)),
        };
        Ok(Self { pem, algorithm })
    }

    /// An ECDSA P-256 signer whose signatures depend on the key and the
    /// message alone (RFC 6979 nonces), unlike ring's; None for other keys.
    pub(crate) fn deterministic_signer(&self) -> Option<DeterministicEcdsa> {
        if self.algorithm != KeyAlgorithm::EcdsaP256 {
            return None;
        }
        let block = pem::decode(&self.pem)?;
        let secret = match block.label.as_str() {
            LABEL_EC => p256::SecretKey::from_sec1_der(&block.der).ok()?,
            _ => p256::SecretKey::from_pkcs8_der(&block.der).ok()?,
        };
        let public = {
            use p256::elliptic_curve::sec1::ToEncodedPoint;
            secret
                .public_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec()
        };
        Some(DeterministicEcdsa {
            key: p256::ecdsa::SigningKey::from(secret),
            public,
        })
    }

    /// Reads a PEM key in any form Talos reads (the three labels above, or
    /// a plain PKCS#8 `PRIVATE KEY`), checking that its body parses.
    pub(crate) fn parse(text: &str) -> Result<Self, KeyError> {
        let block = pem::decode(text).ok_or(KeyError::NotPem)?;
        let algorithm = match block.label.as_str() {
            LABEL_ED25519 => {
                ed25519_seed(&block.der).ok_or(KeyError::Malformed("Ed25519"))?;
                KeyAlgorithm::Ed25519
            }
            LABEL_EC => {
                p256::SecretKey::from_sec1_der(&block.der)
                    .map_err(|_| KeyError::Malformed("ECDSA P-256 (SEC1)"))?;
                KeyAlgorithm::EcdsaP256
            }
            LABEL_RSA => {
                rsa::PrivateKey::from_pkcs1_der(&block.der)
                    .map_err(|_| KeyError::Malformed("RSA (PKCS#1)"))?;
                KeyAlgorithm::Rsa
            }
            LABEL_PKCS8 => pkcs8_algorithm(&block.der)?,
            other => return Err(KeyError::UnsupportedLabel(other.to_owned())),
        };
        Ok(Self {
            pem: text.to_owned(),
            algorithm,
        })
    }

    pub(crate) fn algorithm(&self) -> KeyAlgorithm {
        self.algorithm
    }

    pub(crate) fn as_pem(&self) -> &str {
        &self.pem
    }

    /// The key as rcgen signs with it: PKCS#8, with the public key included
    /// (ring needs it for ECDSA; Go's SEC1 and OpenSSL's PKCS#8 may lack it).
    pub(crate) fn signing_key(&self) -> Result<KeyPair, KeyError> {
        let block = pem::decode(&self.pem).ok_or(KeyError::NotPem)?;
        let malformed = || {
            KeyError::Malformed(match self.algorithm {
                KeyAlgorithm::Ed25519 => "Ed25519",
                KeyAlgorithm::EcdsaP256 => "ECDSA P-256",
                KeyAlgorithm::Rsa => "RSA",
            })
        };
        let pkcs8 = match (self.algorithm, block.label.as_str()) {
            (KeyAlgorithm::EcdsaP256, LABEL_EC) => p256::SecretKey::from_sec1_der(&block.der)
                .ok()
                .and_then(|key| key.to_pkcs8_der().ok())
                .map(|der| der.as_bytes().to_vec()),
            (KeyAlgorithm::EcdsaP256, _) => p256::SecretKey::from_pkcs8_der(&block.der)
                .ok()
                .and_then(|key| key.to_pkcs8_der().ok())
                .map(|der| der.as_bytes().to_vec()),
            (KeyAlgorithm::Rsa, LABEL_RSA) => rsa::PrivateKey::from_pkcs1_der(&block.der)
                .ok()
                .and_then(|key| key.to_pkcs8_der().ok())
                .map(|der| der.as_bytes().to_vec()),
            (KeyAlgorithm::Ed25519 | KeyAlgorithm::Rsa, _) => Some(block.der),
        }
        .ok_or_else(malformed)?;
        KeyPair::from_pkcs8_der_and_sign_algo(
            &pkcs8.as_slice().into(),
            signature_algorithm(self.algorithm),
        )
        .map_err(|_| malformed())
    }
}

/// How certificates signed by a key of `algorithm` are signed (as Go does:
/// pure Ed25519, ECDSA with SHA-256, RSA PKCS#1 v1.5 with SHA-256).
pub(crate) fn signature_algorithm(algorithm: KeyAlgorithm) -> &'static SignatureAlgorithm {
    match algorithm {
        KeyAlgorithm::Ed25519 => &rcgen::PKCS_ED25519,
        KeyAlgorithm::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        KeyAlgorithm::Rsa => &rcgen::PKCS_RSA_SHA256,
    }
}

fn ed25519_pkcs8(seed: &[u8; 32]) -> Vec<u8> {
    [&ED25519_PKCS8_PREFIX[..], seed].concat()
}

/// The seed of a PKCS#8 v1 Ed25519 key, as Go and Talos write it.
fn ed25519_seed(der: &[u8]) -> Option<&[u8]> {
    der.strip_prefix(&ED25519_PKCS8_PREFIX[..])
        .filter(|seed| seed.len() == 32)
}

/// The P-256 key of `seed`: the first of SHA-256(seed, counter) that is a
/// valid scalar (all but about 2^-32 of them are).
fn derived_p256(seed: &[u8; 32]) -> Result<p256::SecretKey, KeyError> {
    use sha2::{Digest, Sha256};
    (0u8..16)
        .find_map(|counter| {
            let digest = Sha256::new()
                .chain_update(seed)
                .chain_update([counter])
                .finalize();
            p256::SecretKey::from_slice(&digest).ok()
        })
        .ok_or(KeyError::Generation(KeyAlgorithm::EcdsaP256))
}

/// See [`PrivateKeyPem::deterministic_signer`].
pub(crate) struct DeterministicEcdsa {
    key: p256::ecdsa::SigningKey,
    /// The uncompressed public point, as rcgen wants it.
    public: Vec<u8>,
}

impl rcgen::PublicKeyData for DeterministicEcdsa {
    fn der_bytes(&self) -> &[u8] {
        &self.public
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        &rcgen::PKCS_ECDSA_P256_SHA256
    }
}

impl rcgen::SigningKey for DeterministicEcdsa {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        use p256::ecdsa::signature::Signer as _;
        let signature: p256::ecdsa::Signature = self.key.sign(message);
        Ok(signature.to_der().as_bytes().to_vec())
    }
}

/// A uniformly random P-256 key. A 32-byte string is a valid scalar unless it
/// is zero or not below the group order (odds about 2^-32), so draw again.
fn random_p256() -> Result<p256::SecretKey, KeyError> {
    for _ in 0..16 {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|_| KeyError::Random)?;
        if let Ok(key) = p256::SecretKey::from_slice(&bytes) {
            return Ok(key);
        }
    }
    Err(KeyError::Random)
}

/// SEC1 with the curve named and the public point included, as Go writes.
fn sec1_p256(key: &p256::SecretKey) -> Vec<u8> {
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    let point = key.public_key().to_encoded_point(false);
    let scalar = key.to_bytes();
    [
        &SEC1_P256_HEAD[..],
        &scalar[..],
        &SEC1_P256_CURVE_AND_POINT_HEAD[..],
        point.as_bytes(),
    ]
    .concat()
}

/// Which Talos algorithm a plain PKCS#8 key uses.
fn pkcs8_algorithm(der: &[u8]) -> Result<KeyAlgorithm, KeyError> {
    if ed25519_seed(der).is_some() {
        return Ok(KeyAlgorithm::Ed25519);
    }
    if p256::SecretKey::from_pkcs8_der(der).is_ok() {
        return Ok(KeyAlgorithm::EcdsaP256);
    }
    if rsa::PrivateKey::from_pkcs8_der(der).is_ok() {
        return Ok(KeyAlgorithm::Rsa);
    }
    // Ed25519 in PKCS#8 v2 (with the public key), as ring writes it.
    match KeyPair::from_pkcs8_der_and_sign_algo(&der.into(), &rcgen::PKCS_ED25519) {
        Ok(_) => Ok(KeyAlgorithm::Ed25519),
        Err(_) => Err(KeyError::UnsupportedAlgorithm),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ed25519_keys_are_labelled_and_shaped_like_talos() {
        let key = PrivateKeyPem::generate(KeyAlgorithm::Ed25519).unwrap();
        assert!(
            key.as_pem()
                .starts_with("-----BEGIN ED25519 PRIVATE KEY-----\n")
        );
        let block = pem::decode(key.as_pem()).unwrap();
        // Same 48-byte v1 structure as the OS CA key in Talos' own bundles.
        assert_eq!(block.der.len(), 48);
        assert!(block.der.starts_with(&ED25519_PKCS8_PREFIX));
        assert_eq!(PrivateKeyPem::parse(key.as_pem()).unwrap(), key);
        assert_eq!(key.signing_key().unwrap().algorithm(), &rcgen::PKCS_ED25519);
    }

    #[test]
    fn ec_keys_are_sec1_with_named_curve() {
        let key = PrivateKeyPem::generate(KeyAlgorithm::EcdsaP256).unwrap();
        assert!(key.as_pem().starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
        let der = pem::decode(key.as_pem()).unwrap().der;
        assert_eq!(der.len(), 121);
        // Go's layout: version 1, the scalar, then `[0]` holding OID
        // 1.2.840.10045.3.1.7 (prime256v1), which x509.ParseECPrivateKey
        // needs, then `[1]` with the point.
        assert_eq!(&der[..7], &[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
        assert_eq!(
            &der[39..51],
            &[
                0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07
            ]
        );
        assert_eq!(&der[51..56], &[0xa1, 0x44, 0x03, 0x42, 0x00]);
        let parsed = p256::SecretKey::from_sec1_der(&der).unwrap();
        assert_eq!(
            sec1_p256(&parsed),
            der,
            "public point must match the scalar"
        );
        assert_eq!(PrivateKeyPem::parse(key.as_pem()).unwrap(), key);
        let signer = key.signing_key().unwrap();
        assert_eq!(signer.algorithm(), &rcgen::PKCS_ECDSA_P256_SHA256);
    }

    #[test]
    fn plain_pkcs8_keys_are_recognised() {
        let ec = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let parsed = PrivateKeyPem::parse(&ec.serialize_pem()).unwrap();
        assert_eq!(parsed.algorithm(), KeyAlgorithm::EcdsaP256);
        assert!(parsed.signing_key().is_ok());
        let ed = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        assert_eq!(
            PrivateKeyPem::parse(&ed.serialize_pem())
                .unwrap()
                .algorithm(),
            KeyAlgorithm::Ed25519
        );
    }

    #[test]
    fn garbage_is_rejected_without_echoing_it() {
        assert_eq!(PrivateKeyPem::parse("hunter2"), Err(KeyError::NotPem));
        let fake = pem::encode(LABEL_EC, b"hunter2-not-a-key");
        let error = PrivateKeyPem::parse(&fake).unwrap_err();
        assert!(matches!(error, KeyError::Malformed(_)));
        assert!(!format!("{error} {error:?}").contains("hunter2"));
        let other = pem::encode("OPENSSH PRIVATE KEY", b"x");
        assert_eq!(
            PrivateKeyPem::parse(&other),
            Err(KeyError::UnsupportedLabel("OPENSSH PRIVATE KEY".into()))
        );
    }

    #[test]
    fn debug_output_hides_the_key() {
        let key = PrivateKeyPem::generate(KeyAlgorithm::Ed25519).unwrap();
        let debug = format!("{key:?}");
        assert!(!debug.contains("BEGIN"), "{debug}");
        assert!(debug.contains("Ed25519"));
    }
}
