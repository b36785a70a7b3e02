use std::time::{Duration, SystemTime, UNIX_EPOCH};

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::ParsedExtension;
use x509_parser::oid_registry::{
    OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_SIG_ECDSA_WITH_SHA256, OID_SIG_ED25519,
};

use super::*;

/// A fixed, whole-second "now", so validity checks are exact.
fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

fn with_cert<T>(pem_text: &str, check: impl FnOnce(&X509Certificate<'_>) -> T) -> T {
    let der = certificate_der(pem_text).expect("PEM certificate");
    check(&parse_certificate(&der).expect("parses"))
}

fn seconds(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

#[test]
fn cas_are_shaped_like_talos() {
    for (kind, subject, algorithm) in [
        (CaKind::Os, "O=talos", KeyAlgorithm::Ed25519),
        (CaKind::Etcd, "O=etcd", KeyAlgorithm::EcdsaP256),
        (CaKind::Kubernetes, "O=kubernetes", KeyAlgorithm::EcdsaP256),
        (
            CaKind::KubernetesAggregator,
            "CN=front-proxy",
            KeyAlgorithm::EcdsaP256,
        ),
    ] {
        let ca = CertificateAuthority::generate(kind, now()).unwrap();
        assert_eq!(ca.key_algorithm(), algorithm);
        assert_eq!(ca.not_after(), now() + CA_VALIDITY);
        with_cert(ca.certificate_pem(), |cert| {
            assert_eq!(cert.subject().to_string(), subject);
            assert_eq!(cert.issuer(), cert.subject(), "self-signed");
            assert_eq!(cert.validity().not_before.timestamp(), seconds(now()));
            assert_eq!(
                cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp(),
                87_600 * 3600
            );
            let constraints = cert.basic_constraints().unwrap().unwrap();
            assert!(constraints.critical && constraints.value.ca);
            assert_eq!(constraints.value.path_len_constraint, None);
            let usage = cert.key_usage().unwrap().unwrap();
            assert!(usage.critical);
            assert!(usage.value.digital_signature() && usage.value.key_cert_sign());
            assert!(!usage.value.key_encipherment());
            let eku = cert.extended_key_usage().unwrap().unwrap().value;
            assert!(eku.server_auth && eku.client_auth);
            assert!(cert.iter_extensions().any(|e| matches!(
                e.parsed_extension(),
                ParsedExtension::SubjectKeyIdentifier(_)
            )));
            let serial = cert.raw_serial();
            assert_eq!(serial.len(), 16);
            assert!(serial[0] & 0x80 == 0, "positive serial");
            match algorithm {
                KeyAlgorithm::Ed25519 => {
                    assert_eq!(cert.signature_algorithm.algorithm, OID_SIG_ED25519);
                }
                _ => {
                    assert_eq!(
                        cert.signature_algorithm.algorithm,
                        OID_SIG_ECDSA_WITH_SHA256
                    );
                    let spki = &cert.public_key().algorithm;
                    assert_eq!(spki.algorithm, OID_KEY_TYPE_EC_PUBLIC_KEY);
                    let curve = spki.parameters.as_ref().unwrap().as_oid().unwrap();
                    assert_eq!(curve, OID_EC_P256);
                }
            }
            cert.verify_signature(None)
                .expect("self-signature verifies");
        });
    }
}

#[test]
fn ca_round_trips_through_pem_and_rejects_a_foreign_key() {
    let ca = CertificateAuthority::generate(CaKind::Etcd, now()).unwrap();
    let again = CertificateAuthority::from_pem(ca.certificate_pem(), ca.key().as_pem()).unwrap();
    assert_eq!(again, ca);
    let other = CertificateAuthority::generate(CaKind::Kubernetes, now()).unwrap();
    assert_eq!(
        CertificateAuthority::from_pem(ca.certificate_pem(), other.key().as_pem()),
        Err(PkiError::KeyMismatch)
    );
    assert_eq!(
        CertificateAuthority::from_pem("not a cert", ca.key().as_pem()),
        Err(PkiError::NotCertificate)
    );
}

#[test]
fn issued_client_certificates_chain_to_the_ca() {
    let ca = CertificateAuthority::generate(CaKind::Kubernetes, now()).unwrap();
    let year = Duration::from_secs(365 * 24 * 3600);
    let issued = ca
        .issue(
            &ClientCertificateRequest {
                common_name: Some("admin".into()),
                organization: "system:masters".into(),
                algorithm: KeyAlgorithm::EcdsaP256,
                key_usages: vec![
                    KeyUsagePurpose::DigitalSignature,
                    KeyUsagePurpose::KeyEncipherment,
                ],
                validity: year,
            },
            now(),
        )
        .unwrap();
    assert_eq!(issued.not_after, now() + year);
    assert_eq!(issued.key.algorithm(), KeyAlgorithm::EcdsaP256);
    assert_eq!(
        certificate_not_after(&issued.cert_pem).unwrap(),
        now() + year
    );
    let ca_der = certificate_der(ca.certificate_pem()).unwrap();
    let ca_cert = parse_certificate(&ca_der).unwrap();
    with_cert(&issued.cert_pem, |cert| {
        assert_eq!(cert.subject().to_string(), "O=system:masters, CN=admin");
        // Byte-identical issuer: Go and Kubernetes match chains on raw names.
        assert_eq!(cert.issuer().as_raw(), ca_cert.subject().as_raw());
        assert_eq!(cert.validity().not_before.timestamp(), seconds(now()) - 10);
        assert!(!cert.is_ca());
        let usage = cert.key_usage().unwrap().unwrap().value;
        assert!(usage.digital_signature() && usage.key_encipherment() && !usage.key_cert_sign());
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        let aki = cert
            .iter_extensions()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::AuthorityKeyIdentifier(aki) => aki.key_identifier.clone(),
                _ => None,
            })
            .expect("authority key identifier");
        let ski = ca_cert
            .iter_extensions()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(ski) => Some(ski.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(aki.0, ski.0);
        cert.verify_signature(Some(ca_cert.public_key()))
            .expect("signed by the CA");
    });
}

#[test]
fn ed25519_ca_issues_ed25519_client_certificates() {
    let ca = CertificateAuthority::generate(CaKind::Os, now()).unwrap();
    let issued = ca
        .issue(
            &ClientCertificateRequest {
                common_name: None,
                organization: "os:admin".into(),
                algorithm: KeyAlgorithm::Ed25519,
                key_usages: vec![KeyUsagePurpose::DigitalSignature],
                validity: Duration::from_secs(3600),
            },
            now(),
        )
        .unwrap();
    let ca_der = certificate_der(ca.certificate_pem()).unwrap();
    let ca_cert = parse_certificate(&ca_der).unwrap();
    with_cert(&issued.cert_pem, |cert| {
        assert_eq!(cert.subject().to_string(), "O=os:admin");
        assert_eq!(cert.signature_algorithm.algorithm, OID_SIG_ED25519);
        cert.verify_signature(Some(ca_cert.public_key())).unwrap();
    });
    assert!(
        issued
            .key
            .as_pem()
            .starts_with("-----BEGIN ED25519 PRIVATE KEY-----")
    );
}

#[test]
fn derived_client_certificates_are_the_same_each_time_and_chain_to_the_ca() {
    for (kind, algorithm) in [
        (CaKind::Kubernetes, KeyAlgorithm::EcdsaP256),
        (CaKind::Os, KeyAlgorithm::Ed25519),
    ] {
        let ca = CertificateAuthority::generate(kind, now()).unwrap();
        let request = ClientCertificateRequest {
            common_name: None,
            organization: "os:admin".into(),
            algorithm,
            key_usages: vec![KeyUsagePurpose::DigitalSignature],
            validity: Duration::from_secs(3600),
        };
        let first = ca.issue_derived(&request, "pools", now()).unwrap();
        let again = ca.issue_derived(&request, "pools", now()).unwrap();
        assert_eq!(
            first.cert_pem, again.cert_pem,
            "{kind:?}: the same certificate"
        );
        assert_eq!(first.key.as_pem(), again.key.as_pem());
        let other_label = ca.issue_derived(&request, "other", now()).unwrap();
        assert_ne!(other_label.key.as_pem(), first.key.as_pem());
        let later = ca
            .issue_derived(&request, "pools", now() + Duration::from_secs(1))
            .unwrap();
        assert_ne!(later.key.as_pem(), first.key.as_pem());
        let ca_der = certificate_der(ca.certificate_pem()).unwrap();
        let ca_cert = parse_certificate(&ca_der).unwrap();
        let key = first.key.signing_key().unwrap();
        with_cert(&first.cert_pem, |cert| {
            assert_eq!(cert.validity().not_before.timestamp(), seconds(now()));
            cert.verify_signature(Some(ca_cert.public_key()))
                .expect("signed by the CA");
            assert_eq!(
                cert.public_key().subject_public_key.data.as_ref(),
                rcgen::PublicKeyData::der_bytes(&key),
                "the key is the certificate's"
            );
        });
    }
}

#[test]
fn debug_output_hides_keys() {
    let ca = CertificateAuthority::generate(CaKind::Os, now()).unwrap();
    let debug = format!("{ca:?}");
    assert!(!debug.contains("PRIVATE"), "{debug}");
    assert!(!debug.contains(ca.key().as_pem()), "{debug}");
}
