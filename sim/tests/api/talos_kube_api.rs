//! The emulated Kubernetes API server seen from outside, as hct checks it:
//! `GET /readyz` over HTTPS on a control plane's `<private-ip>:6443`
//! through the SOCKS5 proxy, with the admin kubeconfig's client
//! certificate, once the cluster is bootstrapped.

use crate::common;

use common::{call, sim, socks5, talos_image};

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use hct_sim::talos::calls::{self, NodeRef};
use hct_sim::talos::sample::{ClientCertificate, SampleCluster, SampleNode};
use hct_sim::{Id, SimHandle};
use reqwest::{Method, StatusCode};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

const APID: u16 = 50000;
const KUBE_API: u16 = 6443;
const PATIENCE: Duration = Duration::from_secs(20);
/// The seeded network's gateway, which the node's default route must use.
const GATEWAY: &str = "10.0.0.1";
/// SOCKS5 reply: connection refused.
const REFUSED: u8 = 5;

/// Creates a private-only Talos server configured by its user data.
async fn configured_server(sim: &SimHandle, name: &str, config: &str) -> Id {
    let network = sim.inspect(|w| *w.networks.keys().next().unwrap());
    let body = json!({
        "name": name,
        "server_type": "cx23",
        "location": "nbg1",
        "image": talos_image(sim).to_string(),
        "networks": [network],
        "public_net": {"enable_ipv4": false, "enable_ipv6": false},
        "user_data": config,
    });
    let (status, answer) = call(sim, Method::POST, "/servers", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["server"]["id"].as_i64().unwrap()
}

fn endpoint(sim: &SimHandle, id: Id, port: u16) -> Option<String> {
    sim.state_json()["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["server"] == id && e["port"] == port)
        .map(|e| e["target"].as_str().unwrap().to_string())
}

fn private_ip(sim: &SimHandle, id: Id) -> Ipv4Addr {
    sim.inspect(|w| w.servers[&id].private_net[0].ip)
}

async fn until(what: &str, holds: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !holds() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A client that trusts the Kubernetes CA and shows `client`, if any.
fn client_config(kubernetes_ca: &str, client: Option<&ClientCertificate>) -> ClientConfig {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(kubernetes_ca.as_bytes()).unwrap())
        .unwrap();
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
    let mut config = match client {
        None => builder.with_no_client_auth(),
        Some(client) => {
            let chain = CertificateDer::pem_slice_iter(client.certificate.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(
                client
                    .key
                    .expose()
                    .replace("ED25519 PRIVATE KEY", "PRIVATE KEY")
                    .as_bytes(),
            )
            .unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// `GET path` as hct sends it; the status and the body.
async fn get(sim: &SimHandle, ip: Ipv4Addr, config: ClientConfig, path: &str) -> (u16, String) {
    let (code, tcp) = socks5(sim.proxy_addr(), ip, KUBE_API).await;
    assert_eq!(code, 0, "the proxy connects to {ip}:{KUBE_API}");
    let mut tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::IpAddress(ip.into()), tcp)
        .await
        .expect("a certificate from the Kubernetes CA for the private IP");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {ip}:{KUBE_API}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(length, body.len(), "{answer}");
    (status, body.to_string())
}

fn bootstrap(sim: &SimHandle, id: Id) {
    sim.modify(|w| {
        let incarnation = w.servers[&id].talos.as_ref().unwrap().node.run.incarnation;
        calls::bootstrap(
            w,
            NodeRef {
                server: id,
                incarnation,
            },
        )
    })
    .unwrap();
}

#[tokio::test]
async fn a_bootstrapped_control_plane_answers_readyz_to_its_admins() {
    let sim = sim().await;
    let cluster = SampleCluster::generate("sim", "https://api.sim.internal:6443").unwrap();
    let mut node = SampleNode::new(true, "v1.12.6", GATEWAY);
    node.kubernetes = Some("v1.34.1".into());
    let config = cluster.machine_config(&node);
    let cp = configured_server(&sim, "cp-1", &config).await;
    until("apid serves the configured node", || {
        endpoint(&sim, cp, APID).is_some()
            && sim.state_json()["servers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["id"] == cp && s["talos"]["mode"] == "configured")
    })
    .await;
    let ip = private_ip(&sim, cp);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(endpoint(&sim, cp, KUBE_API), None, "not bootstrapped");
    assert_eq!(socks5(sim.proxy_addr(), ip, KUBE_API).await.0, REFUSED);

    bootstrap(&sim, cp);
    until("the API server listens", || {
        endpoint(&sim, cp, KUBE_API).is_some()
    })
    .await;
    let ca = &cluster.kubernetes_ca.certificate;
    let admin = cluster.kubernetes_admin().unwrap();
    let trusted = || client_config(ca, Some(&admin));
    assert_eq!(
        get(&sim, ip, trusted(), "/readyz").await,
        (200, "ok".into())
    );
    assert_eq!(get(&sim, ip, trusted(), "/livez").await, (200, "ok".into()));
    let (status, nodes) = get(&sim, ip, trusted(), "/api/v1/nodes").await;
    assert_eq!(status, 200, "{nodes}");
    let nodes: serde_json::Value = serde_json::from_str(&nodes).unwrap();
    assert_eq!(nodes["kind"], "NodeList");
    let (status, missing) = get(&sim, ip, trusted(), "/api/v1/widgets").await;
    assert_eq!(status, 404);
    let missing: serde_json::Value = serde_json::from_str(&missing).unwrap();
    assert_eq!(missing["kind"], "Status");
    assert_eq!(missing["reason"], "NotFound");
    let (status, version) = get(&sim, ip, trusted(), "/version").await;
    assert_eq!(status, 200, "{version}");
    let version: serde_json::Value = serde_json::from_str(&version).unwrap();
    assert_eq!(
        version["gitVersion"], "v1.34.1",
        "the config's apiServer image"
    );
    assert_eq!(version["minor"], "34");
    assert_eq!(version["platform"], "linux/amd64", "cx23 is x86");
    let (status, verbose) = get(&sim, ip, trusted(), "/readyz?verbose").await;
    assert_eq!(status, 200);
    assert!(verbose.contains("[+]etcd ok"), "{verbose}");

    // No certificate, another cluster's admin, and this cluster's Talos
    // admin (OS CA) are all strangers to the API server.
    let other = SampleCluster::generate("other", "https://10.0.128.99:6443").unwrap();
    let strangers = [
        client_config(ca, None),
        client_config(ca, Some(&other.kubernetes_admin().unwrap())),
        client_config(ca, Some(&cluster.client_certificate("os:admin").unwrap())),
    ];
    for config in strangers {
        let (status, body) = get(&sim, ip, config, "/readyz").await;
        assert_eq!(status, 401, "{body}");
        assert!(body.contains("Unauthorized"), "{body}");
    }

    // The server proves itself with the Kubernetes CA, not the OS CA.
    let (_, tcp) = socks5(sim.proxy_addr(), ip, KUBE_API).await;
    let os_ca_trusting = client_config(&cluster.os_ca.certificate, Some(&admin));
    assert!(
        TlsConnector::from(Arc::new(os_ca_trusting))
            .connect(ServerName::IpAddress(ip.into()), tcp)
            .await
            .is_err()
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn apiserver_down_faults_and_power_offs() {
    let sim = sim().await;
    let cluster = SampleCluster::generate("sim", "https://10.0.0.99:6443").unwrap();
    let config = cluster.machine_config(&SampleNode::new(true, "v1.12.6", GATEWAY));
    let cp = configured_server(&sim, "cp-1", &config).await;
    until("apid serves", || endpoint(&sim, cp, APID).is_some()).await;
    until("configured", || {
        sim.inspect(|w| {
            w.servers[&cp]
                .talos
                .as_ref()
                .unwrap()
                .node
                .config()
                .is_some()
        })
    })
    .await;
    bootstrap(&sim, cp);
    until("the API server listens", || {
        endpoint(&sim, cp, KUBE_API).is_some()
    })
    .await;
    let ip = private_ip(&sim, cp);
    let admin = cluster.kubernetes_admin().unwrap();
    let trusted = || client_config(&cluster.kubernetes_ca.certificate, Some(&admin));
    assert_eq!(get(&sim, ip, trusted(), "/readyz").await.0, 200);
    let (_, version) = get(&sim, ip, trusted(), "/version").await;
    assert!(
        version.contains("\"gitVersion\": \"v1.35.2\""),
        "Talos v1.12's default without an apiServer image: {version}"
    );

    let fault = json!({"talos": "apiserver_down", "server": "cp-1"});
    let (status, listed) = call(&sim, Method::POST, "/_sim/faults", Some(fault.clone())).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["talos"][0], fault);
    let (status, body) = get(&sim, ip, trusted(), "/readyz").await;
    assert_eq!(status, 500);
    assert!(body.contains("[-]etcd failed: injected"), "{body}");
    assert_eq!(get(&sim, ip, trusted(), "/livez").await.0, 200);

    sim.clear_faults();
    assert_eq!(get(&sim, ip, trusted(), "/readyz").await.0, 200);
    sim.make_kube_apiserver_unready(cp);
    assert_eq!(get(&sim, ip, trusted(), "/readyz").await.0, 500);
    sim.clear_faults();

    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, _) = call(
            &sim,
            Method::POST,
            &format!("/servers/{cp}/actions/poweroff"),
            None,
        )
        .await;
        if status == StatusCode::CREATED {
            break;
        }
        assert_eq!(status, StatusCode::LOCKED);
        assert!(Instant::now() < deadline, "the server stayed locked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    until("the API server goes away", || {
        endpoint(&sim, cp, KUBE_API).is_none()
    })
    .await;
    assert_ne!(socks5(sim.proxy_addr(), ip, KUBE_API).await.0, 0);
    sim.shutdown().await.unwrap();
}

/// The names of the cluster's CSRs, as the API server lists them.
async fn csr_names(sim: &SimHandle, ip: Ipv4Addr, config: ClientConfig) -> Vec<String> {
    let (status, body) = get(
        sim,
        ip,
        config,
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_restarted_sim_serves_the_saved_cluster_and_its_objects() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let options = hct_sim::SimOptions {
        state_file: Some(dir.path().join("state.json")),
        ..hct_sim::SimOptions::seeded_fast()
    };
    let sim = hct_sim::Sim::start(options.clone()).await.unwrap();
    let cluster = SampleCluster::generate("sim", "https://api.sim.internal:6443").unwrap();
    let config = cluster.machine_config(&SampleNode::new(true, "v1.12.6", GATEWAY));
    let cp = configured_server(&sim, "cp-1", &config).await;
    until("apid serves the configured node", || {
        endpoint(&sim, cp, APID).is_some()
    })
    .await;
    bootstrap(&sim, cp);
    until("the API server listens", || {
        endpoint(&sim, cp, KUBE_API).is_some()
    })
    .await;
    let ip = private_ip(&sim, cp);
    let ca = &cluster.kubernetes_ca.certificate;
    let admin = cluster.kubernetes_admin().unwrap();
    let trusted = || client_config(ca, Some(&admin));
    let before = csr_names(&sim, ip, trusted()).await;
    assert_eq!(before.len(), 1, "the kubelet's serving CSR");
    sim.shutdown().await.unwrap();

    let again = hct_sim::Sim::start(options).await.unwrap();
    until("the API server is back", || {
        endpoint(&again, cp, KUBE_API).is_some()
    })
    .await;
    assert_eq!(
        get(&again, ip, trusted(), "/readyz").await,
        (200, "ok".into()),
        "etcd came back with the node's disk"
    );
    assert_eq!(
        csr_names(&again, ip, trusted()).await,
        before,
        "the same objects, not new ones"
    );
    again.shutdown().await.unwrap();
}
