//! `ephemeral "hct_kubeconfig"` through the real gRPC service of the shipped
//! provider: it is announced (metadata, schema), validated with attribute
//! paths, opened into a fresh short-lived admin certificate signed by the
//! cluster's Kubernetes CA, answered with a deferral (or an error) for
//! unknown configuration, and closed.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hct::cluster::pool_access::PoolAccess;
use hct::cluster::settings::{ConfigDelivery, JoinKeys, WorkerJoin};
use hct::protocol::pb::tfplugin6::{self as pb, provider_server::Provider as _};
use hct::protocol::service::ProviderService;
use hct::talos::Secrets;
use hct::tf::{Type, Value, msgpack};
use tonic::Request;
use x509_parser::prelude::{FromDer, X509Certificate};

const TYPE_NAME: &str = "hct_kubeconfig";

fn service() -> ProviderService {
    ProviderService::new(Arc::new(hct::resources::provider()))
}

fn schema_type() -> Type {
    hct::resources::provider()
        .ephemeral_resource(TYPE_NAME)
        .unwrap()
        .schema()
        .value_type()
}

fn dynamic(value: Value) -> Option<pb::DynamicValue> {
    let ty = schema_type();
    Some(pb::DynamicValue {
        msgpack: msgpack::encode(&value.conform(&ty), &ty).unwrap(),
        json: vec![],
    })
}

fn join(secrets: &Secrets) -> String {
    WorkerJoin {
        version: WorkerJoin::VERSION,
        cluster_name: "demo".into(),
        network_id: 1,
        network_plan: support::plan::reference(3).to_json(),
        talos_version: "v1.12.6".into(),
        kubernetes_version: None,
        image_id: "1".into(),
        schematic_id: "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba".into(),
        install_disk: "/dev/sda".into(),
        config_delivery: ConfigDelivery::Apply,
        ssh_key_ids: vec![],
        keys: JoinKeys::Pool {
            join_secrets: secrets.join_secrets(),
            access: PoolAccess::issue(secrets, SystemTime::now()).unwrap(),
        },
    }
    .encode()
}

/// With the cluster's secrets when known (`hct_cluster.<name>.machine_secrets`).
fn config(worker_join: Value, secrets: Option<&Secrets>, validity: Value) -> Value {
    let machine_secrets = secrets.map_or(Value::Unknown, |s| Value::from(s.to_yaml()));
    Value::object([
        ("worker_join", worker_join),
        ("machine_secrets", machine_secrets),
        ("validity", validity),
    ])
}

fn der(pem_text: &str) -> Vec<u8> {
    ::pem::parse(pem_text).unwrap().into_contents()
}

#[tokio::test]
async fn the_ephemeral_resource_is_announced() {
    let service = service();
    let metadata = service
        .get_metadata(Request::new(pb::get_metadata::Request {}))
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = metadata
        .ephemeral_resources
        .iter()
        .map(|r| r.type_name.as_str())
        .collect();
    assert_eq!(names, [TYPE_NAME]);
    let schemas = service
        .get_provider_schema(Request::new(pb::get_provider_schema::Request {}))
        .await
        .unwrap()
        .into_inner();
    let block = schemas.ephemeral_resource_schemas[TYPE_NAME]
        .block
        .clone()
        .unwrap();
    let attribute = |name: &str| {
        block
            .attributes
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("{name} in the schema"))
            .clone()
    };
    assert!(attribute("worker_join").required && attribute("worker_join").sensitive);
    assert!(attribute("client_key").computed && attribute("client_key").sensitive);
    assert!(attribute("kubeconfig").sensitive);
    for name in ["host", "cluster_ca_certificate", "client_certificate"] {
        assert!(
            attribute(name).computed && !attribute(name).sensitive,
            "{name}"
        );
    }
    assert!(!schemas.resource_schemas.contains_key(TYPE_NAME));
}

#[tokio::test]
async fn validate_names_the_attribute() {
    let response = service()
        .validate_ephemeral_resource_config(Request::new(
            pb::validate_ephemeral_resource_config::Request {
                type_name: TYPE_NAME.into(),
                config: dynamic(config(Value::Unknown, None, Value::from("48h"))),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.diagnostics.len(), 1, "{:?}", response.diagnostics);
    let d = &response.diagnostics[0];
    assert_eq!(d.summary, "Invalid validity");
    assert!(d.detail.contains("48h"), "{}", d.detail);
    let step = d.attribute.as_ref().unwrap().steps[0].selector.clone();
    assert_eq!(
        step,
        Some(pb::attribute_path::step::Selector::AttributeName(
            "validity".into()
        ))
    );
}

#[tokio::test]
async fn open_mints_a_short_lived_admin_certificate_from_the_clusters_ca() {
    let secrets = Secrets::generate().unwrap();
    let service = service();
    let before = SystemTime::now();
    let opened = service
        .open_ephemeral_resource(Request::new(pb::open_ephemeral_resource::Request {
            type_name: TYPE_NAME.into(),
            config: dynamic(config(
                Value::from(join(&secrets)),
                Some(&secrets),
                Value::from("30m"),
            )),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(opened.diagnostics.is_empty(), "{:?}", opened.diagnostics);
    assert!(opened.renew_at.is_none() && opened.deferred.is_none());
    let result = msgpack::decode(&opened.result.unwrap().msgpack, &schema_type()).unwrap();
    let text = |name: &str| result.get(name).as_str().unwrap().to_string();
    assert_eq!(text("host"), "https://10.0.128.17:6443");
    assert_eq!(text("validity"), "30m");
    assert_eq!(
        text("cluster_ca_certificate"),
        secrets.kubernetes_ca().certificate_pem()
    );

    let cert_der = der(&text("client_certificate"));
    let (_, cert) = X509Certificate::from_der(&cert_der).unwrap();
    let ca_der = der(secrets.kubernetes_ca().certificate_pem());
    let (_, ca) = X509Certificate::from_der(&ca_der).unwrap();
    cert.verify_signature(Some(ca.public_key()))
        .expect("signed by the cluster's Kubernetes CA");
    assert_eq!(cert.subject().to_string(), "O=system:masters, CN=admin");
    let not_after = UNIX_EPOCH + Duration::from_secs(cert.validity().not_after.timestamp() as u64);
    let lifetime = not_after.duration_since(before).unwrap();
    assert!(
        lifetime > Duration::from_secs(29 * 60) && lifetime <= Duration::from_secs(31 * 60),
        "{lifetime:?}"
    );
    assert_eq!(
        text("expires_at"),
        humantime::format_rfc3339_seconds(not_after).to_string()
    );
    assert!(text("client_key").starts_with("-----BEGIN EC PRIVATE KEY-----"));

    // The kubeconfig holds the same four values.
    let credentials =
        hct::talos::client_config::kubeconfig_credentials(&text("kubeconfig")).unwrap();
    assert_eq!(credentials.host, text("host"));
    assert_eq!(credentials.client_certificate, text("client_certificate"));
    assert_eq!(credentials.client_key, text("client_key"));
    assert_eq!(
        credentials.cluster_ca_certificate,
        text("cluster_ca_certificate")
    );

    // Every open is a new certificate; close has nothing to release.
    let again = service
        .open_ephemeral_resource(Request::new(pb::open_ephemeral_resource::Request {
            type_name: TYPE_NAME.into(),
            config: dynamic(config(
                Value::from(join(&secrets)),
                Some(&secrets),
                Value::Null,
            )),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    let again = msgpack::decode(&again.result.unwrap().msgpack, &schema_type()).unwrap();
    assert_ne!(again.get("client_key"), result.get("client_key"));
    let closed = service
        .close_ephemeral_resource(Request::new(pb::close_ephemeral_resource::Request {
            type_name: TYPE_NAME.into(),
            private: opened.private,
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(closed.diagnostics.is_empty());
}

#[tokio::test]
async fn unknown_configuration_is_deferred_when_the_client_allows_it() {
    let service = service();
    let open = |deferral_allowed| pb::open_ephemeral_resource::Request {
        type_name: TYPE_NAME.into(),
        config: dynamic(config(Value::Unknown, None, Value::Null)),
        client_capabilities: Some(pb::ClientCapabilities {
            deferral_allowed,
            write_only_attributes_allowed: false,
        }),
    };
    let deferred = service
        .open_ephemeral_resource(Request::new(open(true)))
        .await
        .unwrap()
        .into_inner();
    assert!(deferred.diagnostics.is_empty());
    assert_eq!(
        deferred.deferred.unwrap().reason,
        pb::deferred::Reason::ResourceConfigUnknown as i32
    );
    let result = msgpack::decode(&deferred.result.unwrap().msgpack, &schema_type()).unwrap();
    assert!(result.is_unknown());

    let refused = service
        .open_ephemeral_resource(Request::new(open(false)))
        .await
        .unwrap()
        .into_inner();
    assert!(refused.result.is_none() && refused.deferred.is_none());
    assert_eq!(
        refused.diagnostics[0].summary,
        "hct_kubeconfig cannot be opened yet"
    );
}

#[tokio::test]
async fn a_bad_worker_join_fails_open_without_quoting_it() {
    let opened = service()
        .open_ephemeral_resource(Request::new(pb::open_ephemeral_resource::Request {
            type_name: TYPE_NAME.into(),
            config: dynamic(config(
                Value::from("{\"not\": \"a join\"}"),
                Some(&Secrets::for_checking().unwrap()),
                Value::Null,
            )),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(opened.result.is_none());
    let d = &opened.diagnostics[0];
    assert_eq!(d.summary, "Invalid worker_join");
    assert!(!d.detail.contains("a join"), "{}", d.detail);
}
