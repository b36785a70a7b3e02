//! Talos' own client (machinery's `client` package, in `talos-check client`)
//! against hct-sim's emulated Talos nodes, through the sim's SOCKS5 proxy,
//! with the talosconfig hct issues: what talosctl would see of a cluster
//! that hct's configs made. hct's own Talos client is tested against the
//! same nodes in tests/integration/talos_api.rs; this holds the emulation to the real
//! client's expectations (TLS, metadata, streamed answers).

use crate::peers;
use crate::support;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use hct::hcloud::PrivateServer;
use hct::network_plan::NetworkPlan;
use hct::talos::api::{AdminCredentials, EtcdMembers, NodeAddress, TalosClient, TalosError, Trust};
use hct::talos::{NodeConfigInput, Role, Secrets};
use hct_sim::{SimHandle, SimOptions};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

const PATIENCE: Duration = Duration::from_secs(30);

fn plan() -> NetworkPlan {
    support::plan::reference(1)
}

fn machine_config(
    talos: &str,
    plan: &NetworkPlan,
    secrets: &Secrets,
    hostname: &str,
    role: Role,
) -> String {
    let input = NodeConfigInput {
        cluster_name: "machinery".into(),
        talos_version: talos.parse().unwrap(),
        kubernetes_version: None,
        schematic_id: hct_sim::seed::TALOS_SCHEMATIC.into(),
        install_disk: None,
        hostname: hostname.into(),
        role,
        node_labels: BTreeMap::new(),
        node_taints: BTreeMap::new(),
        inline_manifests: Vec::new(),
        config_patches: Vec::new(),
        interface: None,
        ip: None,
    };
    hct::talos::generate(&input, plan, secrets)
        .unwrap()
        .into_string()
}

fn seeded_id(sim: &SimHandle, find: impl Fn(&hct_sim::World) -> Option<i64>) -> i64 {
    sim.inspect(|w| find(w)).unwrap()
}

/// A private-only Talos `talos` server at `ip` that boots with `config` as
/// user data.
async fn server(sim: &SimHandle, talos: &str, name: &str, ip: &str, config: &str) {
    let image = seeded_id(sim, |w| {
        w.images
            .values()
            .find(|i| {
                i.labels.get("version").map(String::as_str) == Some(talos)
                    && i.labels.get("arch").map(String::as_str) == Some("amd64")
            })
            .map(|i| i.id)
    });
    let network = seeded_id(sim, |w| {
        w.networks
            .values()
            .find(|n| n.name == "the private network")
            .map(|n| n.id)
    });
    let client = crate::support::sim::client(sim);
    let spec = PrivateServer {
        name: name.into(),
        server_type: "cx23".into(),
        location: "nbg1".into(),
        image: image.to_string(),
        network,
        ip: ip.parse().unwrap(),
        placement_group: None,
        labels: [("cluster".to_owned(), "machinery".to_owned())].into(),
        user_data: Some(hct::talos::user_data(config).unwrap()),
        ssh_keys: vec![],
    };
    client
        .create_private_server(&spec, PATIENCE, |_| {})
        .await
        .unwrap();
}

/// Tries until `attempt` succeeds, failing the test after `PATIENCE`.
async fn eventually<T, Fut>(what: &str, mut attempt: impl FnMut() -> Fut) -> T
where
    Fut: std::future::Future<Output = Result<T, TalosError>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        match attempt().await {
            Ok(value) => return value,
            Err(e) if Instant::now() >= deadline => panic!("{what}: still failing: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// A `key: value` of YAML, wherever it is nested.
fn yaml_value<'a>(yaml: &'a str, key: &str) -> Option<&'a str> {
    yaml.lines().find_map(|line| {
        line.trim_start()
            .trim_start_matches("- ")
            .strip_prefix(key)?
            .strip_prefix(": ")
    })
}

fn admin_trust(talosconfig: &str) -> Trust {
    use base64::Engine;
    let field = |key| {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(yaml_value(talosconfig, key).unwrap())
            .unwrap();
        String::from_utf8(pem).unwrap()
    };
    Trust::Admin(AdminCredentials {
        os_ca: field("ca"),
        certificate: field("crt"),
        key: hct::provider::config::Secret::new(field("key")),
    })
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn talos_client_reads_a_cluster_hct_configured() {
    let checker = peers::peers().talos_check("v1.12.6");
    client_reads("v1.12.6", checker).await;
}

/// The same at Talos v1.14 (its Kubernetes documents, TLS 1.3 only on the
/// API server), read by Talos' own v1.14 client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn talos_v1_14_client_reads_a_v1_14_cluster_hct_configured() {
    let peers = peers::peers();
    let Some(release) = peers.talos_release_of_minor_or_skip("v1.14") else {
        return;
    };
    client_reads("v1.14.0", peers.talos_check(&release)).await;
}

/// Brings up three control planes and a worker on Talos `talos` from hct's
/// configs and has Talos' client (`checker`) read them.
async fn client_reads(talos: &str, checker: std::path::PathBuf) {
    let sim = hct_sim::Sim::start(SimOptions::seeded_fast())
        .await
        .unwrap();
    let plan = plan();
    let secrets = Secrets::generate().unwrap();

    let control_planes = [
        ("cp-1", "10.0.128.17"),
        ("cp-2", "10.0.128.18"),
        ("cp-3", "10.0.128.19"),
    ];
    let worker = ("general-1", "10.0.128.65");
    let mut configs = BTreeMap::new();
    for (name, ip) in control_planes {
        let config = machine_config(talos, &plan, &secrets, name, Role::ControlPlane);
        server(&sim, talos, name, ip, &config).await;
        configs.insert(ip, config);
    }
    let config = machine_config(talos, &plan, &secrets, worker.0, Role::Worker);
    server(&sim, talos, worker.0, worker.1, &config).await;
    configs.insert(worker.1, config);

    // Bootstrap with hct's client, and wait for etcd to list every member.
    let talosconfig = hct::talos::client_config::talosconfig("machinery", &plan, &secrets)
        .unwrap()
        .as_str()
        .to_owned();
    let trust = admin_trust(&talosconfig);
    let cp1 = NodeAddress::new(
        "10.0.128.17".parse::<IpAddr>().unwrap(),
        Some(hct::net::Proxy::new(sim.proxy_addr())),
    );
    eventually("bootstrap", || async {
        TalosClient::connect(&cp1, &trust).await?.bootstrap().await
    })
    .await;
    eventually("three etcd members", || async {
        let members = TalosClient::connect(&cp1, &trust)
            .await?
            .etcd_members(Duration::from_secs(5))
            .await?;
        if matches!(&members, EtcdMembers::Listed(m) if m.len() == 3) {
            Ok(())
        } else {
            Err(TalosError::NotReady {
                node: "10.0.128.17".into(),
                message: format!("{members:?}"),
            })
        }
    })
    .await;
    eventually("a kubeconfig", || async {
        TalosClient::connect(&cp1, &trust).await?.kubeconfig().await
    })
    .await;

    let dir = tempfile::tempdir().unwrap();
    let talosconfig_path = dir.path().join("talosconfig");
    std::fs::write(&talosconfig_path, &talosconfig).unwrap();
    let nodes: Vec<&str> = configs.keys().copied().collect();
    let proxy = sim.proxy_url();
    let out = tokio::task::spawn_blocking({
        let nodes = nodes.join(",");
        move || {
            std::process::Command::new(&checker)
                .arg("client")
                .arg("-talosconfig")
                .arg(&talosconfig_path)
                .args(["-proxy", &proxy, "-nodes", &nodes, "-timeout", "60s"])
                .env_remove("HTTPS_PROXY")
                .env_remove("https_proxy")
                .env_remove("ALL_PROXY")
                .output()
                .expect("running talos-check client")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(
        out.status.success(),
        "talos-check client failed ({}):\n{stdout}\n{stderr}",
        out.status
    );

    let has = |line: &str| stdout.lines().any(|l| l.starts_with(line));
    for (ip, config) in &configs {
        assert!(has(&format!("{ip} Version: {talos} (")), "{ip}: no Version");
        assert!(
            has(&format!(
                "{ip} Read /system/state/config.yaml: {} bytes, sha256 {}",
                config.len(),
                sha256_hex(config.as_bytes())
            )),
            "{ip}: the config Talos' client read is not the one hct generated"
        );
        let control_plane = *ip != worker.1;
        for service in ["apid", "kubelet", "etcd"] {
            let listed = stdout.lines().any(|l| {
                l.starts_with(&format!("{ip} ServiceList: {service} Running healthy=true"))
            });
            assert_eq!(
                listed,
                service != "etcd" || control_plane,
                "{ip}: service {service}"
            );
        }
    }
    for (name, _) in control_planes {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("10.0.128.17 EtcdMemberList: {name} id "))),
            "etcd does not list {name}"
        );
    }
    let endpoint = plan.cluster_endpoint();
    assert!(
        has("10.0.128.17 Kubeconfig: ") && stdout.contains(&format!("servers {endpoint}")),
        "no kubeconfig for {endpoint}"
    );

    // The bootstrap manifests: Talos' client and hct's read the same ones
    // (kube-proxy is off in hct's configs: Cilium replaces it).
    let go_read: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("10.0.128.17 Manifest: "))
        .map(str::to_string)
        .collect();
    let hct_read: Vec<String> = TalosClient::connect(&cp1, &trust)
        .await
        .unwrap()
        .bootstrap_manifests()
        .await
        .unwrap()
        .iter()
        .map(|m| {
            let objects: Vec<String> = m
                .objects
                .iter()
                .map(|o| {
                    format!(
                        "{}/{}",
                        o["kind"].as_str().unwrap(),
                        o["metadata"]["name"].as_str().unwrap()
                    )
                })
                .collect();
            format!("{} {}", m.id, objects.join(","))
        })
        .collect();
    assert_eq!(go_read, hct_read);
    let ids: Vec<&str> = go_read.iter().filter_map(|l| l.split(' ').next()).collect();
    assert!(
        ids.contains(&"11-core-dns") && ids.contains(&"00-kubelet-bootstrapping-token"),
        "{ids:?}"
    );
    assert!(!ids.contains(&"10-kube-proxy"), "{ids:?}");
    assert!(
        go_read
            .iter()
            .any(|l| l.starts_with("11-core-dns ") && l.contains("Deployment/coredns")),
        "{go_read:?}"
    );
    sim.shutdown().await.unwrap();
}
