//! The emulated Talos nodes seen from outside: a server created from a
//! Talos snapshot over the HTTP API answers on `<private-ip>:50000` through
//! the SOCKS5 proxy while it runs on a network, with the TLS of maintenance
//! mode, and its faults come and go through `/_sim/faults`.

use crate::common;

use common::{call, sim, socks5, talos_image};

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use hct_sim::{Id, SimHandle};
use reqwest::{Method, StatusCode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

const APID: u16 = 50000;
const PATIENCE: Duration = Duration::from_secs(20);

fn network(sim: &SimHandle) -> Id {
    sim.inspect(|w| *w.networks.keys().next().unwrap())
}

/// Creates and starts a private-only Talos server; returns its ID.
async fn talos_server(sim: &SimHandle, name: &str, networks: &[Id]) -> Id {
    let body = json!({
        "name": name,
        "server_type": "cx23",
        "location": "nbg1",
        "image": talos_image(sim).to_string(),
        "networks": networks,
        "public_net": {"enable_ipv4": false, "enable_ipv6": false},
    });
    let (status, answer) = call(sim, Method::POST, "/servers", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["server"]["id"].as_i64().unwrap()
}

fn server_view(sim: &SimHandle, id: Id) -> Value {
    sim.state_json()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn apid_endpoint(sim: &SimHandle, id: Id) -> Option<String> {
    sim.state_json()["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["server"] == id && e["port"] == APID)
        .map(|e| e["target"].as_str().unwrap().to_string())
}

/// Posts a server action, retrying while an earlier action locks the server.
async fn post_when_unlocked(sim: &SimHandle, path: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, _) = call(sim, Method::POST, path, None).await;
        if status == StatusCode::CREATED {
            return;
        }
        assert_eq!(status, StatusCode::LOCKED, "{path} refused");
        assert!(
            Instant::now() < deadline,
            "{path}: the server stayed locked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn until(what: &str, holds: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !holds() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Takes any server certificate, to look at it afterwards.
#[derive(Debug)]
struct Curious(rustls::crypto::WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Curious {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

fn private_ip(sim: &SimHandle, id: Id) -> Ipv4Addr {
    server_view(sim, id)["private_net"][0]["ip"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn maintenance_apid_shows_a_self_signed_certificate_for_the_private_ip() {
    let sim = sim().await;
    let id = talos_server(&sim, "talos-1", &[network(&sim)]).await;
    until("apid registered", || apid_endpoint(&sim, id).is_some()).await;
    let view = server_view(&sim, id);
    assert_eq!(view["talos"]["mode"], "maintenance");
    assert_eq!(view["talos"]["apid"], "serving");
    let ip = private_ip(&sim, id);

    let (code, tcp) = socks5(sim.proxy_addr(), ip, APID).await;
    assert_eq!(code, 0);
    let provider = rustls::crypto::ring::default_provider();
    let mut config = ClientConfig::builder_with_provider(Arc::new(provider.clone()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Curious(
            provider.signature_verification_algorithms,
        )))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::IpAddress(ip.into()), tcp)
        .await
        .expect("no client certificate is needed in maintenance mode");
    let (_, connection) = tls.get_ref();
    assert_eq!(connection.alpn_protocol(), Some(&b"h2"[..]));
    let leaf = &connection.peer_certificates().unwrap()[0];
    let (_, certificate) = x509_parser::parse_x509_certificate(leaf).unwrap();
    assert_eq!(certificate.issuer(), certificate.subject(), "self-signed");
    let names = certificate.subject_alternative_name().unwrap().unwrap();
    let ip_octets = ip.octets();
    assert!(names.value.general_names.iter().any(|n| matches!(
        n,
        x509_parser::extensions::GeneralName::IPAddress(bytes) if *bytes == ip_octets
    )));
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn apid_answers_only_while_the_server_runs_on_a_network() {
    let sim = sim().await;
    let id = talos_server(&sim, "talos-1", &[]).await;
    until("Talos running", || {
        server_view(&sim, id)["talos"]["phase"] == "running"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(apid_endpoint(&sim, id), None, "no network, no apid");

    let path = format!("/servers/{id}/actions/attach_to_network");
    let (status, _) = call(
        &sim,
        Method::POST,
        &path,
        Some(json!({"network": network(&sim)})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    until("apid registered", || apid_endpoint(&sim, id).is_some()).await;
    let ip = private_ip(&sim, id);
    assert_eq!(socks5(sim.proxy_addr(), ip, APID).await.0, 0);

    // The previous action may still hold the server's lock (423).
    post_when_unlocked(&sim, &format!("/servers/{id}/actions/poweroff")).await;
    until("apid withdrawn", || apid_endpoint(&sim, id).is_none()).await;
    assert_eq!(server_view(&sim, id)["talos"]["phase"], "off");
    assert_ne!(socks5(sim.proxy_addr(), ip, APID).await.0, 0);

    post_when_unlocked(&sim, &format!("/servers/{id}/actions/poweron")).await;
    until("apid back", || apid_endpoint(&sim, id).is_some()).await;
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn talos_faults_come_and_go_through_the_admin_api() {
    let sim = sim().await;
    let faults = json!([
        {"talos": "unreachable", "server": "talos-1"},
        {"talos": "slow_boot", "server": "talos-2", "delay_ms": 1500},
    ]);
    let (status, listed) = call(&sim, Method::POST, "/_sim/faults", Some(faults)).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(
        listed["talos"][0],
        json!({"talos": "unreachable", "server": "talos-1"})
    );
    let (status, _) = call(
        &sim,
        Method::POST,
        "/_sim/faults",
        Some(json!({"talos": "on_fire"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let net = network(&sim);
    let hidden = talos_server(&sim, "talos-1", &[net]).await;
    let slow = talos_server(&sim, "talos-2", &[net]).await;
    until("talos-1 running", || {
        server_view(&sim, hidden)["talos"]["phase"] == "running"
    })
    .await;
    let running_at = Instant::now();
    assert_eq!(server_view(&sim, slow)["talos"]["phase"], "booting");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(apid_endpoint(&sim, hidden), None, "unreachable by fault");
    until("talos-2 up", || apid_endpoint(&sim, slow).is_some()).await;
    assert!(running_at.elapsed() >= Duration::from_millis(1000));

    let (status, _) = call(&sim, Method::DELETE, "/_sim/faults", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    until("talos-1 reachable", || {
        apid_endpoint(&sim, hidden).is_some()
    })
    .await;

    // The call log is served, and emptied, beside the faults.
    let (status, log) = call(&sim, Method::GET, "/_sim/talos/calls", None).await;
    assert_eq!(status, StatusCode::OK, "{log}");
    assert!(log["calls"].is_array(), "{log}");
    let (status, _) = call(&sim, Method::DELETE, "/_sim/talos/calls", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_endpoint_registered_by_hand_takes_precedence() {
    let sim = sim().await;
    let stand_in = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stand_in_addr = stand_in.local_addr().unwrap();
    let id = talos_server(&sim, "talos-1", &[network(&sim)]).await;
    sim.register_endpoint(id, APID, stand_in_addr).unwrap();
    until("Talos running", || {
        server_view(&sim, id)["talos"]["phase"] == "running"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(apid_endpoint(&sim, id), Some(stand_in_addr.to_string()));

    sim.unregister_endpoint(id, APID);
    until("emulated apid", || {
        apid_endpoint(&sim, id).is_some_and(|a| a != stand_in_addr.to_string())
    })
    .await;
    sim.shutdown().await.unwrap();
}
