use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use rsa::pkcs1::DecodeRsaPrivateKey;
use serde_json::Value;

use super::*;
use crate::talos::testing;
use crate::talos::yaml;

#[test]
fn generated_bundle_has_talos_formats() {
    let secrets = testing::generated_secrets();
    assert_eq!(URL_SAFE.decode(&secrets.cluster_id).unwrap().len(), 32);
    assert_eq!(STANDARD.decode(&secrets.cluster_secret).unwrap().len(), 32);
    assert!(token::is_valid(&secrets.bootstrap_token));
    assert!(token::is_valid(&secrets.trustd_token));
    assert_ne!(secrets.bootstrap_token, secrets.trustd_token);
    match &secrets.encryption {
        EncryptionSecret::Secretbox(key) => assert_eq!(STANDARD.decode(key).unwrap().len(), 32),
        EncryptionSecret::AesCbc(_) => panic!("new bundles use secretbox"),
    }
    assert_eq!(secrets.os_ca().key_algorithm(), KeyAlgorithm::Ed25519);
    for ca in [
        secrets.etcd_ca(),
        secrets.kubernetes_ca(),
        secrets.aggregator_ca(),
    ] {
        assert_eq!(ca.key_algorithm(), KeyAlgorithm::EcdsaP256);
    }
    assert_eq!(secrets.service_account_key_algorithm(), KeyAlgorithm::Rsa);
    let sa_pem = secrets.service_account_key.as_pem();
    assert!(sa_pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    let sa = rsa::PrivateKey::from_pkcs1_pem(sa_pem).unwrap();
    assert_eq!(rsa::traits::PublicKeyParts::size(&sa), 512, "RSA-4096");
}

#[test]
fn two_bundles_share_nothing() {
    let a = testing::generated_secrets();
    let b = testing::fixture_secrets();
    assert_ne!(a.cluster_id, b.cluster_id);
    assert_ne!(a.cluster_secret, b.cluster_secret);
    assert_ne!(a.os_ca().certificate_pem(), b.os_ca().certificate_pem());
}

#[test]
fn secrets_yaml_round_trips_byte_for_byte() {
    let text = testing::FIXTURE_SECRETS_YAML;
    let secrets = Secrets::from_yaml(text).unwrap();
    // The fixture opens with a comment line; the rest is what we write.
    let (comment, body) = text.split_once('\n').unwrap();
    assert!(comment.starts_with('#'));
    assert_eq!(secrets.to_yaml(), body);
    assert_eq!(Secrets::from_yaml(&secrets.to_yaml()).unwrap(), secrets);

    let generated = testing::generated_secrets();
    assert_eq!(
        &Secrets::from_yaml(&generated.to_yaml()).unwrap(),
        generated
    );
}

#[test]
fn secrets_yaml_has_talosctl_layout() {
    let document = yaml::parse_documents(testing::FIXTURE_SECRETS_YAML)
        .unwrap()
        .remove(0);
    let keys =
        |value: &Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&document),
        ["cluster", "secrets", "trustdinfo", "certs"]
    );
    assert_eq!(keys(&document["cluster"]), ["id", "secret"]);
    assert_eq!(
        keys(&document["secrets"]),
        ["bootstraptoken", "secretboxencryptionsecret"]
    );
    assert_eq!(
        keys(&document["certs"]),
        ["etcd", "k8s", "k8saggregator", "k8sserviceaccount", "os"]
    );
    let crt = STANDARD
        .decode(document["certs"]["os"]["crt"].as_str().unwrap())
        .unwrap();
    assert!(crt.starts_with(b"-----BEGIN CERTIFICATE-----\n"));
    let key = STANDARD
        .decode(document["certs"]["os"]["key"].as_str().unwrap())
        .unwrap();
    assert!(key.starts_with(b"-----BEGIN ED25519 PRIVATE KEY-----\n"));
}

/// The fixture with one field replaced (or removed, for `None`).
fn fixture_with(path: &[&str], value: Option<Value>) -> String {
    let mut document = yaml::parse_documents(testing::FIXTURE_SECRETS_YAML)
        .unwrap()
        .remove(0);
    let (last, parents) = path.split_last().unwrap();
    let parent = parents.iter().fold(&mut document, |v, key| &mut v[*key]);
    let map = parent.as_object_mut().unwrap();
    match value {
        Some(value) => {
            map.insert((*last).to_owned(), value);
        }
        None => {
            map.remove(*last);
        }
    }
    yaml::to_string(&[document])
}

#[test]
fn older_bundles_with_ecdsa_service_account_and_aescbc_are_adopted() {
    let ec_key = crate::talos::pki::PrivateKeyPem::generate(KeyAlgorithm::EcdsaP256).unwrap();
    let text = fixture_with(
        &["certs", "k8sserviceaccount", "key"],
        Some(STANDARD.encode(ec_key.as_pem()).into()),
    );
    let text = {
        let mut document = yaml::parse_documents(&text).unwrap().remove(0);
        let section = document["secrets"].as_object_mut().unwrap();
        section.remove("secretboxencryptionsecret");
        section.insert(
            "aescbcencryptionsecret".into(),
            STANDARD.encode([7u8; 32]).into(),
        );
        yaml::to_string(&[document])
    };
    let secrets = Secrets::from_yaml(&text).unwrap();
    assert_eq!(
        secrets.service_account_key_algorithm(),
        KeyAlgorithm::EcdsaP256
    );
    assert!(matches!(secrets.encryption, EncryptionSecret::AesCbc(_)));
    assert_eq!(secrets.to_yaml(), text);
}

#[test]
fn problems_name_the_field_and_never_the_value() {
    let fixture = testing::fixture_secrets();
    let cases = [
        (
            fixture_with(&["cluster", "id"], None),
            "cluster.id is missing",
        ),
        (
            fixture_with(&["secrets", "bootstraptoken"], Some("Bad.Token".into())),
            "secrets.bootstraptoken must have the form",
        ),
        (
            fixture_with(
                &["secrets", "aescbcencryptionsecret"],
                Some(STANDARD.encode([1u8; 32]).into()),
            ),
            "holds both",
        ),
        (
            fixture_with(
                &["secrets", "secretboxencryptionsecret"],
                Some(STANDARD.encode([1u8; 5]).into()),
            ),
            "secrets.secretboxencryptionsecret must decode to [32] bytes",
        ),
        (
            fixture_with(
                &["certs", "os", "key"],
                Some(
                    STANDARD
                        .encode(fixture.kubernetes_ca().key().as_pem())
                        .into(),
                ),
            ),
            "certs.os the certificate's public key does not belong to the private key",
        ),
        (
            fixture_with(&["certs", "etcd", "crt"], Some("%%%".into())),
            "certs.etcd.crt is not base64",
        ),
        (
            fixture_with(&["trustdinfo", "token"], Some(Value::from(5))),
            "trustdinfo.token must be a string",
        ),
        ("- a list\n".to_owned(), "must be a single YAML mapping"),
        ("cluster: [\n".to_owned(), "invalid YAML at line"),
    ];
    for (text, expected) in cases {
        let error = Secrets::from_yaml(&text).unwrap_err().to_string();
        assert!(
            error.contains(expected),
            "{error:?} should contain {expected:?}"
        );
        for secret in [
            &fixture.cluster_secret,
            &fixture.bootstrap_token,
            &fixture.trustd_token,
        ] {
            assert!(!error.contains(secret.as_str()), "{error} leaks a secret");
        }
        assert!(!error.contains("PRIVATE KEY"), "{error}");
    }
}

#[test]
fn debug_output_shows_no_secret() {
    let secrets = testing::fixture_secrets();
    let debug = format!("{secrets:?}");
    for secret in [
        secrets.cluster_id.as_str(),
        secrets.cluster_secret.as_str(),
        secrets.bootstrap_token.as_str(),
        secrets.trustd_token.as_str(),
        secrets.service_account_key.as_pem(),
        secrets.os_ca().key().as_pem(),
    ] {
        assert!(!debug.contains(secret), "{debug}");
    }
}

#[test]
fn the_checking_bundle_has_the_same_shape_without_rsa() {
    let checking = Secrets::for_checking().unwrap();
    assert_eq!(
        checking.service_account_key_algorithm(),
        KeyAlgorithm::EcdsaP256
    );
    assert_eq!(checking.os_ca().key_algorithm(), KeyAlgorithm::Ed25519);
    // It reads back as talosctl's secrets.yaml, as a real bundle does.
    let again = Secrets::from_yaml(&checking.to_yaml()).unwrap();
    assert_eq!(again.to_yaml(), checking.to_yaml());
}
