use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use x509_parser::oid_registry::{OID_KEY_TYPE_EC_PUBLIC_KEY, OID_SIG_ED25519};

use super::*;
use crate::talos::pki::{PrivateKeyPem, parse_certificate};
use crate::talos::testing::{self, reference_plan};

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

fn parse(config: &ClientConfig) -> Value {
    let mut documents = yaml::parse_documents(config.as_str()).unwrap();
    assert_eq!(documents.len(), 1);
    documents.remove(0)
}

fn decoded(value: &Value) -> String {
    String::from_utf8(STANDARD.decode(value.as_str().unwrap()).unwrap()).unwrap()
}

/// Checks a client certificate against its issuing CA and returns its subject.
fn check_client_certificate(cert_pem: &str, ca_pem: &str, key_pem: &str) -> String {
    let cert_der = ::pem::parse(cert_pem).unwrap().into_contents();
    let ca_der = ::pem::parse(ca_pem).unwrap().into_contents();
    let (cert, ca) = (
        parse_certificate(&cert_der).unwrap(),
        parse_certificate(&ca_der).unwrap(),
    );
    cert.verify_signature(Some(ca.public_key()))
        .expect("signed by the CA");
    assert_eq!(cert.issuer().as_raw(), ca.subject().as_raw());
    assert!(!cert.is_ca());
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && !eku.server_auth);
    assert_eq!(
        cert.validity().not_after.timestamp(),
        (now() + ADMIN_CERTIFICATE_VALIDITY)
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    );
    let key = PrivateKeyPem::parse(key_pem)
        .unwrap()
        .signing_key()
        .unwrap();
    assert_eq!(
        cert.public_key().subject_public_key.data.as_ref(),
        key.public_key_raw()
    );
    cert.subject().to_string()
}

#[test]
fn talosconfig_targets_the_control_plane_as_os_admin() {
    let secrets = testing::fixture_secrets();
    let config = talosconfig_at("demo", &reference_plan(), secrets, now()).unwrap();
    assert_eq!(config.expires(), now() + ADMIN_CERTIFICATE_VALIDITY);
    let document = parse(&config);
    assert_eq!(document["context"], "demo");
    let context = &document["contexts"]["demo"];
    let control_plane = json!(["10.0.128.17", "10.0.128.18", "10.0.128.19"]);
    assert_eq!(context["endpoints"], control_plane);
    assert_eq!(context["nodes"], control_plane);
    assert_eq!(decoded(&context["ca"]), secrets.os_ca().certificate_pem());
    let key = decoded(&context["key"]);
    assert!(key.starts_with("-----BEGIN ED25519 PRIVATE KEY-----\n"));
    let subject = check_client_certificate(
        &decoded(&context["crt"]),
        secrets.os_ca().certificate_pem(),
        &key,
    );
    assert_eq!(subject, "O=os:admin");
    let cert_der = ::pem::parse(decoded(&context["crt"]))
        .unwrap()
        .into_contents();
    let cert = parse_certificate(&cert_der).unwrap();
    assert_eq!(cert.signature_algorithm.algorithm, OID_SIG_ED25519);
    let usage = cert.key_usage().unwrap().unwrap().value;
    assert!(usage.digital_signature() && !usage.key_encipherment());
}

#[test]
fn kubeconfig_is_cluster_admin_via_the_endpoint() {
    let secrets = testing::fixture_secrets();
    let config = admin_kubeconfig_at("demo", &reference_plan(), secrets, now()).unwrap();
    assert_eq!(config.expires(), now() + ADMIN_CERTIFICATE_VALIDITY);
    let document = parse(&config);
    assert_eq!(document["apiVersion"], "v1");
    assert_eq!(document["kind"], "Config");
    assert_eq!(document["current-context"], "admin@demo");
    assert_eq!(
        document["contexts"],
        json!([{"name": "admin@demo", "context": {"cluster": "demo", "namespace": "default", "user": "admin@demo"}}])
    );
    let cluster = &document["clusters"][0];
    assert_eq!(cluster["name"], "demo");
    assert_eq!(cluster["cluster"]["server"], "https://10.0.128.17:6443");
    assert_eq!(
        decoded(&cluster["cluster"]["certificate-authority-data"]),
        secrets.kubernetes_ca().certificate_pem()
    );
    let user = &document["users"][0];
    assert_eq!(user["name"], "admin@demo");
    let key = decoded(&user["user"]["client-key-data"]);
    assert!(key.starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
    let cert_pem = decoded(&user["user"]["client-certificate-data"]);
    let subject =
        check_client_certificate(&cert_pem, secrets.kubernetes_ca().certificate_pem(), &key);
    assert_eq!(subject, "O=system:masters, CN=admin");
    let cert_der = ::pem::parse(&cert_pem).unwrap().into_contents();
    let cert = parse_certificate(&cert_der).unwrap();
    assert_eq!(
        cert.public_key().algorithm.algorithm,
        OID_KEY_TYPE_EC_PUBLIC_KEY
    );
    let usage = cert.key_usage().unwrap().unwrap().value;
    assert!(usage.digital_signature() && usage.key_encipherment() && !usage.key_cert_sign());
}

#[test]
fn every_call_makes_a_new_key() {
    let secrets = testing::fixture_secrets();
    let a = admin_kubeconfig_at("demo", &reference_plan(), secrets, now()).unwrap();
    let b = admin_kubeconfig_at("demo", &reference_plan(), secrets, now()).unwrap();
    assert_ne!(a.as_str(), b.as_str());
}

#[test]
fn bad_cluster_names_are_refused_and_debug_hides_keys() {
    let secrets = testing::fixture_secrets();
    assert_eq!(
        talosconfig("Not Valid", &reference_plan(), secrets).unwrap_err(),
        ClientConfigError::InvalidClusterName("Not Valid".into())
    );
    let config = talosconfig("demo", &reference_plan(), secrets).unwrap();
    let debug = format!("{config:?}");
    assert!(
        debug.starts_with("ClientConfig { expires:") && !debug.contains("key"),
        "{debug}"
    );
}

#[test]
fn configs_are_due_for_renewal_in_their_last_thirty_days() {
    let plan = reference_plan();
    let secrets = testing::fixture_secrets();
    let issued = now();
    let talosconfig = talosconfig_at("noreturn", &plan, secrets, issued).unwrap();
    let kubeconfig = admin_kubeconfig_at("noreturn", &plan, secrets, issued).unwrap();
    for config in [&talosconfig, &kubeconfig] {
        assert_eq!(
            client_certificate_expiry(config.as_str()),
            Some(config.expires())
        );
        let day = Duration::from_secs(24 * 3600);
        assert!(!due_for_renewal(config.as_str(), issued));
        assert!(!due_for_renewal(config.as_str(), issued + 334 * day));
        assert!(due_for_renewal(config.as_str(), issued + 336 * day));
        assert!(due_for_renewal(config.as_str(), issued + 400 * day));
    }
    assert!(!due_for_renewal("not: a config", issued));
}

#[test]
fn short_lived_kubeconfigs_come_apart_into_provider_credentials() {
    let secrets = testing::fixture_secrets();
    let hour = Duration::from_secs(3600);
    let config =
        admin_kubeconfig_valid_for("demo", &reference_plan(), secrets, now(), hour).unwrap();
    assert_eq!(config.expires(), now() + hour);
    let credentials = kubeconfig_credentials(config.as_str()).unwrap();
    assert_eq!(credentials.host, "https://10.0.128.17:6443");
    assert_eq!(
        credentials.cluster_ca_certificate,
        secrets.kubernetes_ca().certificate_pem()
    );
    assert_eq!(
        crate::talos::pki::certificate_not_after(&credentials.client_certificate).unwrap(),
        now() + hour
    );
    let key = PrivateKeyPem::parse(&credentials.client_key)
        .unwrap()
        .signing_key()
        .unwrap();
    let cert_der = ::pem::parse(&credentials.client_certificate)
        .unwrap()
        .into_contents();
    let cert = parse_certificate(&cert_der).unwrap();
    assert_eq!(
        cert.public_key().subject_public_key.data.as_ref(),
        key.public_key_raw()
    );
    assert_eq!(cert.subject().to_string(), "O=system:masters, CN=admin");
    assert!(!format!("{credentials:?}").contains("PRIVATE"));
    assert_eq!(
        kubeconfig_credentials("apiVersion: v1\nkind: Config\n"),
        None
    );
    let proxied = with_proxy_url(config.as_str(), "socks5://127.0.0.1:1080").unwrap();
    let document = yaml::parse_documents(&proxied).unwrap().remove(0);
    assert_eq!(
        document["clusters"][0]["cluster"]["proxy-url"],
        "socks5://127.0.0.1:1080"
    );
    assert_eq!(kubeconfig_credentials(&proxied), Some(credentials));
}
