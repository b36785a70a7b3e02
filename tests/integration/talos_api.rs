//! hct's Talos API client against the emulated Talos nodes of hct-sim,
//! through the sim's SOCKS5 proxy as on Hetzner: maintenance mode, apply,
//! mutual TLS, bootstrap, kubeconfig, etcd membership, and the ways it goes
//! wrong (another cluster's CA, a wrong trustd token, no default route,
//! bootstrap twice or on a worker), then upgrade and reset.
//!
//! The happy path runs on what hct itself generates (`hct::talos`: secrets,
//! machine configs from a network plan, the talosconfig). The failure cases
//! need configs hct would never make (another cluster's CA, a wrong trustd
//! token, no default route) and take them from hct-sim's samples.

use crate::support;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use base64::Engine;
use hct::hcloud::PrivateServer;
use hct::network_plan::NetworkPlan;
use hct::secret::Secret;
use hct::talos::api::{
    AdminCredentials, ApplyMode, Bootstrapped, EtcdMember, EtcdMembers, NodeAddress, TalosClient,
    TalosError, Trust,
};
use hct::talos::{NodeConfigInput, Role, Secrets};
use hct_sim::talos::sample::{ClientCertificate, SampleCluster, SampleNetwork, SampleNode};
use hct_sim::{Id, SimHandle};
use support::sim::{client as hcloud, start as sim};
use tokio::time::Instant;

const GATEWAY: &str = "10.0.0.1";
const ENDPOINT: &str = "https://10.0.128.11:6443";
/// How long a node may take to do what a test waits for.
const PATIENCE: Duration = Duration::from_secs(30);

/// The seeded Talos snapshot of `version` for amd64, and the seeded network.
fn seeded(sim: &SimHandle, version: &str) -> (Id, Id) {
    (
        support::sim::seeded_talos_image(sim, version, "amd64"),
        support::sim::seeded_network(sim),
    )
}

/// Creates a private-only Talos server at `ip` and waits until it runs.
async fn server(
    sim: &SimHandle,
    name: &str,
    ip: &str,
    talos: &str,
    user_data: Option<String>,
) -> Id {
    let (image, network) = seeded(sim, talos);
    let spec = PrivateServer {
        name: name.into(),
        server_type: "cx23".into(),
        location: "nbg1".into(),
        image: image.to_string(),
        network,
        ip: ip.parse().unwrap(),
        placement_group: None,
        labels: [("cluster".to_string(), "talos-api-test".to_string())].into(),
        user_data,
        ssh_keys: vec![],
    };
    hcloud(sim)
        .create_private_server(&spec, PATIENCE, |_| {})
        .await
        .unwrap()
        .id
}

fn plan() -> NetworkPlan {
    support::plan::reference(1)
}

/// hct's machine config for one node.
fn generated(plan: &NetworkPlan, secrets: &Secrets, hostname: &str, role: Role) -> String {
    let input = NodeConfigInput {
        cluster_name: "hct-test".into(),
        talos_version: "v1.12.6".parse().unwrap(),
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

/// The admin credentials of hct's talosconfig.
fn talosconfig_admin(plan: &NetworkPlan, secrets: &Secrets) -> Trust {
    let talosconfig = hct::talos::client_config::talosconfig("hct-test", plan, secrets).unwrap();
    let field = |key| {
        let encoded = yaml_value(talosconfig.as_str(), key).unwrap();
        let pem = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        String::from_utf8(pem).unwrap()
    };
    Trust::Admin(AdminCredentials {
        os_ca: field("ca"),
        certificate: field("crt"),
        key: Secret::new(field("key")),
    })
}

fn cluster() -> SampleCluster {
    SampleCluster::generate("talos-api-test", ENDPOINT).unwrap()
}

fn control_plane(talos: &str) -> SampleNode {
    SampleNode::new(true, talos, GATEWAY)
}

fn worker(talos: &str) -> SampleNode {
    SampleNode::new(false, talos, GATEWAY)
}

fn address(sim: &SimHandle, ip: &str) -> NodeAddress {
    NodeAddress::new(
        ip.parse::<IpAddr>().unwrap(),
        Some(hct::net::Proxy::new(sim.proxy_addr())),
    )
}

fn credentials(os_ca: &str, client: &ClientCertificate) -> Trust {
    Trust::Admin(AdminCredentials {
        os_ca: os_ca.to_string(),
        certificate: client.certificate.clone(),
        key: Secret::new(client.key.expose()),
    })
}

fn admin(cluster: &SampleCluster) -> Trust {
    credentials(
        &cluster.os_ca.certificate,
        &cluster.client_certificate("os:admin").unwrap(),
    )
}

const MAINTENANCE: Trust = Trust::Maintenance {
    pinned_spki_sha256: None,
};

/// Tries until `attempt` succeeds, failing the test after `PATIENCE`.
async fn eventually<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, TalosError>>,
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

/// A client of the node once it answers Version with `trust`.
async fn connected(sim: &SimHandle, ip: &str, trust: &Trust) -> TalosClient {
    let address = &address(sim, ip);
    eventually(&format!("reaching {ip}"), || async move {
        let mut client = TalosClient::connect(address, trust).await?;
        client.version().await?;
        Ok(client)
    })
    .await
}

/// How long a member list may take in these tests.
const ASK: Duration = Duration::from_secs(5);

/// The members of an answer that lists them; empty for any other.
fn listed(answer: EtcdMembers) -> Vec<EtcdMember> {
    match answer {
        EtcdMembers::Listed(members) => members,
        EtcdMembers::NoneReachable(_) | EtcdMembers::NoLeader(_) => Vec::new(),
    }
}

/// The hostnames etcd lists, asked of `ip` until there are `count`.
async fn etcd_hostnames(sim: &SimHandle, ip: &str, trust: &Trust, count: usize) -> Vec<String> {
    let address = &address(sim, ip);
    eventually(&format!("{count} etcd members"), || async move {
        let mut client = TalosClient::connect(address, trust).await?;
        let mut names: Vec<String> = listed(client.etcd_members(ASK).await?)
            .into_iter()
            .map(|m| m.hostname)
            .collect();
        names.sort();
        if names.len() == count {
            Ok(names)
        } else {
            Err(TalosError::NotReady {
                node: ip.to_string(),
                message: format!("etcd lists {names:?}"),
            })
        }
    })
    .await
}

/// A `key: value` of the kubeconfig YAML, wherever it is nested.
fn yaml_value<'a>(yaml: &'a str, key: &str) -> Option<&'a str> {
    yaml.lines().find_map(|line| {
        line.trim_start()
            .trim_start_matches("- ")
            .strip_prefix(key)?
            .strip_prefix(": ")
    })
}

async fn apply(sim: &SimHandle, ip: &str, config: &str) {
    let mut client = connected(sim, ip, &MAINTENANCE).await;
    client
        .apply_configuration(config.as_bytes(), ApplyMode::Auto)
        .await
        .unwrap();
}

fn talos_state(sim: &SimHandle, server: Id) -> serde_json::Value {
    let state = sim.state_json();
    state["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == server)
        .map(|s| s["talos"].clone())
        .unwrap()
}

async fn state_eventually(sim: &SimHandle, server: Id, holds: impl Fn(&serde_json::Value) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !holds(&talos_state(sim, server)) {
        assert!(
            Instant::now() < deadline,
            "node state never got there: {}",
            talos_state(sim, server)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hct_configs_take_nodes_from_maintenance_to_a_bootstrapped_cluster() {
    let sim = sim().await;
    let plan = plan();
    let secrets = Secrets::generate().unwrap();
    let control_planes = [
        ("cp-1", "10.0.128.17"),
        ("cp-2", "10.0.128.18"),
        ("cp-3", "10.0.128.19"),
    ];
    let mut servers = Vec::new();
    for (name, ip) in control_planes {
        servers.push(server(&sim, name, ip, "v1.12.6", None).await);
    }

    // Maintenance mode: self-signed certificate, only Version and apply.
    let mut maintenance = connected(&sim, "10.0.128.17", &MAINTENANCE).await;
    assert_eq!(maintenance.version().await.unwrap().tag, "v1.12.6");
    assert!(matches!(
        maintenance.services().await,
        Err(TalosError::Maintenance { .. })
    ));
    assert!(matches!(
        maintenance.bootstrap().await,
        Err(TalosError::Maintenance { .. })
    ));
    let invalid = maintenance
        .apply_configuration(
            b"version: v1alpha1\nmachine: {type: controlplane}\ncluster: {}\n",
            ApplyMode::Auto,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&invalid, TalosError::Rejected { code, message, .. }
            if code == "InvalidArgument" && message.contains("machine.token is required")),
        "{invalid}"
    );
    let staged = maintenance
        .apply_configuration(b"", ApplyMode::Staged)
        .await
        .unwrap_err();
    assert!(matches!(staged, TalosError::Maintenance { .. }), "{staged}");
    assert_eq!(talos_state(&sim, servers[0])["mode"], "maintenance");
    // The cluster's admin sees a maintenance-mode node as such, not as a
    // node of another cluster.
    let admin = talosconfig_admin(&plan, &secrets);
    let early = TalosClient::connect(&address(&sim, "10.0.128.17"), &admin).await;
    assert!(
        matches!(early, Err(TalosError::Maintenance { .. })),
        "{:?}",
        early.err()
    );

    for (name, ip) in control_planes {
        apply(
            &sim,
            ip,
            &generated(&plan, &secrets, name, Role::ControlPlane),
        )
        .await;
    }
    let worker_config = generated(&plan, &secrets, "general-1", Role::Worker);
    let user_data = hct::talos::user_data(&worker_config).unwrap();
    let worker = server(&sim, "general-1", "10.0.128.65", "v1.12.6", Some(user_data)).await;

    // Configured: mutual TLS with the cluster's OS CA.
    let admin = talosconfig_admin(&plan, &secrets);
    let mut cp1 = connected(&sim, "10.0.128.17", &admin).await;
    assert_eq!(cp1.version().await.unwrap().tag, "v1.12.6");
    assert!(matches!(
        cp1.kubeconfig().await,
        Err(TalosError::NotReady { .. })
    ));
    assert_eq!(cp1.bootstrap().await.unwrap(), Bootstrapped::Now);
    assert_eq!(cp1.bootstrap().await.unwrap(), Bootstrapped::Already);
    // Talos refuses a Bootstrap only where the node's own etcd data is not
    // empty: once cp-2 has joined, it does.
    state_eventually(&sim, servers[1], |s| s["etcd_member"] == true).await;
    let mut cp2 = connected(&sim, "10.0.128.18", &admin).await;
    assert_eq!(cp2.bootstrap().await.unwrap(), Bootstrapped::Already);
    assert!(
        sim.inspect(|w| w.talos_calls.iter().any(|c| c.call == "Bootstrap"
            && c.node == "cp-2"
            && c.caller == hct_sim::talos::call_log::CallerKind::Verified)),
        "the call log has cp-2's Bootstrap"
    );

    let kubeconfig = String::from_utf8(cp1.kubeconfig().await.unwrap()).unwrap();
    assert_eq!(
        yaml_value(&kubeconfig, "server"),
        Some(plan.cluster_endpoint().as_str())
    );
    assert_eq!(
        yaml_value(&kubeconfig, "current-context"),
        Some("admin@hct-test")
    );
    assert!(yaml_value(&kubeconfig, "client-certificate-data").is_some());

    let hostnames = etcd_hostnames(&sim, "10.0.128.17", &admin, 3).await;
    assert_eq!(hostnames, ["cp-1", "cp-2", "cp-3"]);
    // Through cp-1, as talosctl does with --nodes.
    let mut via_cp1 = connected(&sim, "10.0.128.17", &admin)
        .await
        .target("10.0.128.19".parse().unwrap());
    assert_eq!(listed(via_cp1.etcd_members(ASK).await.unwrap()).len(), 3);

    let services = cp2.services().await.unwrap();
    let ids: Vec<&str> = services.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["apid", "kubelet", "etcd"]);
    assert!(services.iter().all(|s| s.healthy && s.state == "Running"));

    let mut general = connected(&sim, "10.0.128.65", &admin).await;
    assert!(matches!(
        general.bootstrap().await,
        Err(TalosError::NotControlPlane { .. })
    ));
    // The config it runs, as user data delivered it.
    assert_eq!(general.machine_config().await.unwrap(), worker_config);
    let missing = general.read_file("/etc/shadow").await.unwrap_err();
    assert!(
        matches!(&missing, TalosError::Rejected { code, .. } if code == "NotFound"),
        "{missing}"
    );
    let services: Vec<String> = general
        .services()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(services, ["apid", "kubelet"]);

    for server in servers.iter().chain([&worker]) {
        state_eventually(&sim, *server, |t| t["healthy"] == true).await;
    }
    let state = talos_state(&sim, servers[0]);
    assert_eq!(state["mode"], "configured");
    assert_eq!(state["machine_type"], "controlplane");
    assert_eq!(state["bootstrapped"], true);
    assert_eq!(state["etcd_member"], true);
    assert_eq!(state["egress_via"], GATEWAY);
    // The state shows each node's Talos without its secrets.
    let secrets_in_config = [
        yaml_value(&worker_config, "token").unwrap(),
        yaml_value(&worker_config, "secret").unwrap(),
        "PRIVATE KEY",
    ];
    for server in sim.state_json()["servers"].as_array().unwrap() {
        let talos = server["talos"].to_string();
        for secret in secrets_in_config {
            assert!(!talos.contains(secret), "the Talos state shows a secret");
        }
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clusters_credentials_are_refused() {
    let sim = sim().await;
    let cluster = cluster();
    let config = cluster.machine_config(&control_plane("v1.12.6"));
    server(&sim, "cp-1", "10.0.128.11", "v1.12.6", Some(config)).await;
    connected(&sim, "10.0.128.11", &admin(&cluster)).await;

    let stranger = SampleCluster::generate("other", ENDPOINT).unwrap();
    let address = address(&sim, "10.0.128.11");
    let wrong_ca = TalosClient::connect(&address, &admin(&stranger)).await;
    assert!(
        matches!(wrong_ca, Err(TalosError::WrongCa { .. })),
        "{:?}",
        wrong_ca.err()
    );

    // Trusting the right CA, but presenting another cluster's certificate.
    let foreign = credentials(
        &cluster.os_ca.certificate,
        &stranger.client_certificate("os:admin").unwrap(),
    );
    let refused = match TalosClient::connect(&address, &foreign).await {
        Ok(mut client) => client.version().await.unwrap_err(),
        Err(e) => e,
    };
    assert!(
        matches!(refused, TalosError::Unauthorized { .. }),
        "{refused}"
    );

    // A reader may look but not take the kubeconfig.
    let reader = credentials(
        &cluster.os_ca.certificate,
        &cluster.client_certificate("os:reader").unwrap(),
    );
    let mut client = TalosClient::connect(&address, &reader).await.unwrap();
    assert_eq!(client.version().await.unwrap().tag, "v1.12.6");
    assert!(matches!(
        client.kubeconfig().await,
        Err(TalosError::Unauthorized { .. })
    ));
    // Nor read the config, which holds the cluster's secrets.
    assert!(matches!(
        client.machine_config().await,
        Err(TalosError::Unauthorized { .. })
    ));
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_need_a_control_plane_and_the_right_token() {
    let sim = sim().await;
    let cluster = cluster();
    let mut impostor = cluster.clone();
    impostor.trustd_token = hct_sim::talos::secret::Secret::new("wrong0.0123456789abcdef");
    let good = server(
        &sim,
        "w-1",
        "10.0.128.21",
        "v1.12.6",
        Some(cluster.machine_config(&worker("v1.12.6"))),
    )
    .await;
    let bad = server(
        &sim,
        "w-2",
        "10.0.128.22",
        "v1.12.6",
        Some(impostor.machine_config(&worker("v1.12.6"))),
    )
    .await;
    let admin = admin(&cluster);

    // No control plane yet: trustd cannot sign apid's certificate.
    state_eventually(&sim, good, |t| t["apid"] == "awaiting_certificate").await;
    let early = TalosClient::connect(&address(&sim, "10.0.128.21"), &admin).await;
    assert!(
        matches!(early, Err(TalosError::Unreachable { .. })),
        "{:?}",
        early.err()
    );

    server(
        &sim,
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster.machine_config(&control_plane("v1.12.6"))),
    )
    .await;
    let mut w1 = connected(&sim, "10.0.128.21", &admin).await;
    assert!(matches!(
        w1.bootstrap().await,
        Err(TalosError::NotControlPlane { .. })
    ));
    let services: Vec<String> = w1
        .services()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(services, ["apid", "kubelet"]);

    // The impostor's token is not the cluster's: it never gets a certificate.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(talos_state(&sim, bad)["apid"], "awaiting_certificate");
    let never = TalosClient::connect(&address(&sim, "10.0.128.22"), &admin).await;
    assert!(
        matches!(never, Err(TalosError::Unreachable { .. })),
        "{:?}",
        never.err()
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_a_default_route_never_becomes_healthy() {
    let sim = sim().await;
    let cluster = cluster();
    let mut isolated = control_plane("v1.12.6");
    isolated.network = SampleNetwork::Isolated;
    let id = server(
        &sim,
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster.machine_config(&isolated)),
    )
    .await;
    let mut client = connected(&sim, "10.0.128.11", &admin(&cluster)).await;
    assert_eq!(client.bootstrap().await.unwrap(), Bootstrapped::Now);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let services = client.services().await.unwrap();
    let health: Vec<(&str, bool)> = services
        .iter()
        .map(|s| (s.id.as_str(), s.healthy))
        .collect();
    assert_eq!(
        health,
        [("apid", true), ("kubelet", false), ("etcd", false)]
    );
    // No etcd anywhere: Talos holds the call until its deadline.
    let asked = Instant::now();
    assert!(matches!(
        client.etcd_members(Duration::from_millis(400)).await,
        Ok(EtcdMembers::NoneReachable(_))
    ));
    assert!(asked.elapsed() >= Duration::from_millis(300));
    let state = talos_state(&sim, id);
    assert_eq!(
        (&state["healthy"], &state["etcd_member"]),
        (&false.into(), &false.into())
    );
    assert!(
        state["problem"]
            .as_str()
            .unwrap()
            .contains("no default route"),
        "{state}"
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_upgrade_and_reboot() {
    let sim = sim().await;
    let cluster = cluster();
    let id = server(&sim, "cp-1", "10.0.128.11", "v1.11.3", None).await;
    let mut maintenance = connected(&sim, "10.0.128.11", &MAINTENANCE).await;
    assert_eq!(maintenance.version().await.unwrap().tag, "v1.11.3");
    // Talos v1.11 does not know the v1.12 network documents.
    let too_new = maintenance
        .apply_configuration(
            cluster.machine_config(&control_plane("v1.12.6")).as_bytes(),
            ApplyMode::Auto,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&too_new, TalosError::Rejected { message, .. } if message.contains("LinkConfig")),
        "{too_new}"
    );
    apply(
        &sim,
        "10.0.128.11",
        &cluster.machine_config(&control_plane("v1.11.3")),
    )
    .await;

    let admin = admin(&cluster);
    let mut client = connected(&sim, "10.0.128.11", &admin).await;
    assert_eq!(client.version().await.unwrap().tag, "v1.11.3");
    client
        .upgrade("factory.talos.dev/installer/376567988ad370138ad8b2698212367b:v1.12.6")
        .await
        .unwrap();
    let address = &address(&sim, "10.0.128.11");
    let admin = &admin;
    let upgraded = eventually("the upgraded version", || async move {
        let mut client = TalosClient::connect(address, admin).await?;
        let tag = client.version().await?.tag;
        if tag == "v1.12.6" {
            Ok(tag)
        } else {
            Err(TalosError::NotReady {
                node: "cp-1".into(),
                message: tag,
            })
        }
    })
    .await;
    assert_eq!(upgraded, "v1.12.6");

    // A reboot takes the node down for a moment; it comes back configured.
    let mut client = connected(&sim, "10.0.128.11", admin).await;
    client.reboot().await.unwrap();
    assert_eq!(talos_state(&sim, id)["phase"], "booting");
    let mut back = connected(&sim, "10.0.128.11", admin).await;
    assert_eq!(back.version().await.unwrap().tag, "v1.12.6");
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_returns_nodes_to_maintenance_and_etcd_remembers_the_ungraceful() {
    let sim = sim().await;
    let cluster = cluster();
    let nodes = [
        ("cp-1", "10.0.128.11"),
        ("cp-2", "10.0.128.12"),
        ("cp-3", "10.0.128.13"),
    ];
    for (name, ip) in nodes {
        server(&sim, name, ip, "v1.12.6", None).await;
        apply(&sim, ip, &cluster.machine_config(&control_plane("v1.12.6"))).await;
    }
    let admin = admin(&cluster);
    let mut cp1 = connected(&sim, "10.0.128.11", &admin).await;
    cp1.bootstrap().await.unwrap();
    etcd_hostnames(&sim, "10.0.128.11", &admin, 3).await;

    connected(&sim, "10.0.128.12", &admin)
        .await
        .reset(true)
        .await
        .unwrap();
    connected(&sim, "10.0.128.13", &admin)
        .await
        .reset(false)
        .await
        .unwrap();
    // cp-2 left etcd; cp-3 did not say goodbye and is still listed, and
    // counted: one of two members up is no quorum, so etcd has no leader.
    let rings: Vec<_> = support::sim::etcd_rings(&sim).into_values().collect();
    let listed = [("cp-1".to_string(), true), ("cp-3".to_string(), false)];
    assert_eq!(rings, [listed]);
    let mut cp1 = connected(&sim, "10.0.128.11", &admin).await;
    assert_eq!(
        cp1.etcd_members(ASK).await.unwrap(),
        EtcdMembers::NoLeader("etcdserver: no leader".into())
    );

    let mut wiped = connected(&sim, "10.0.128.12", &MAINTENANCE).await;
    assert!(matches!(
        wiped.services().await,
        Err(TalosError::Maintenance { .. })
    ));
    // The wiped node's self-signed certificate is told apart from another
    // cluster's: it is in maintenance mode.
    let refused = TalosClient::connect(&address(&sim, "10.0.128.12"), &admin).await;
    assert!(
        matches!(refused, Err(TalosError::Maintenance { .. })),
        "{:?}",
        refused.err()
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_make_nodes_unreachable_and_reject_configs() {
    let sim = sim().await;
    let cluster = cluster();
    let id = server(&sim, "cp-1", "10.0.128.11", "v1.12.6", None).await;
    let config = cluster.machine_config(&control_plane("v1.12.6"));
    let mut maintenance = connected(&sim, "10.0.128.11", &MAINTENANCE).await;

    sim.reject_talos_apply(id, tonic::Code::ResourceExhausted, "disk full", 1);
    let rejected = maintenance
        .apply_configuration(config.as_bytes(), ApplyMode::Auto)
        .await
        .unwrap_err();
    assert!(
        matches!(&rejected, TalosError::Rejected { code, message, .. }
            if code == "ResourceExhausted" && message == "disk full"),
        "{rejected}"
    );

    sim.make_talos_unreachable(id);
    maintenance
        .apply_configuration(config.as_bytes(), ApplyMode::Auto)
        .await
        .unwrap();
    state_eventually(&sim, id, |t| t["phase"] == "running").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let unreachable = TalosClient::connect(&address(&sim, "10.0.128.11"), &admin(&cluster)).await;
    assert!(
        matches!(unreachable, Err(TalosError::Unreachable { .. })),
        "{:?}",
        unreachable.err()
    );
    sim.clear_faults();
    let mut client = connected(&sim, "10.0.128.11", &admin(&cluster)).await;

    sim.slow_talos_boot(id, Duration::from_millis(800));
    client.reboot().await.unwrap();
    let rebooted = Instant::now();
    connected(&sim, "10.0.128.11", &admin(&cluster)).await;
    assert!(rebooted.elapsed() >= Duration::from_millis(800));
    sim.shutdown().await.unwrap();
}
