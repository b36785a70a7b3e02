//! hct-sim for tests: a seeded emulator with fast actions, hct's Hetzner
//! client pointed at it, and the seeded network and Talos snapshots.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use hct::hcloud::models::Labels;
use hct::hcloud::{Client, ClientConfig, PrivateServer};
use hct::pace::Pace;
use hct::secret::Secret;
use hct_sim::resources::servers::Server;
use hct_sim::state::World;
use hct_sim::talos::call_log::TalosCall;
use hct_sim::{Id, Sim, SimHandle, SimOptions};

/// The seeded emulator ("the private network", Talos snapshots) with fast actions.
pub async fn start() -> SimHandle {
    Sim::start(SimOptions::seeded_fast()).await.unwrap()
}

/// The seeded emulator with a token Hetzner's hcloud provider accepts (it
/// refuses any token that is not 64 characters long, as Hetzner's are).
pub async fn start_for_hcloud_provider() -> SimHandle {
    let token: String = std::iter::repeat_with(fastrand::alphanumeric)
        .take(64)
        .collect();
    Sim::start(SimOptions {
        token,
        ..SimOptions::seeded_fast()
    })
    .await
    .unwrap()
}

/// hct's client for `sim`, polling at once (the sim is much faster than Hetzner).
pub fn client(sim: &SimHandle) -> Client {
    client_paced(sim, Pace::set(Duration::from_millis(50)))
}

/// hct's client for `sim` at `pace`.
pub fn client_paced(sim: &SimHandle, pace: Pace) -> Client {
    Client::new(ClientConfig {
        endpoint: sim.endpoint().parse().unwrap(),
        token: Secret::new(sim.token()),
        pace,
    })
    .unwrap()
}

/// The id of the seeded network "the private network".
pub fn seeded_network(sim: &SimHandle) -> i64 {
    sim.inspect(|w| {
        w.networks
            .values()
            .find(|n| n.name == "the private network")
            .map(|n| n.id)
            .unwrap()
    })
}

/// The id of the seeded Talos snapshot of `version` for `arch`.
pub fn seeded_talos_image(sim: &SimHandle, version: &str, arch: &str) -> i64 {
    sim.inspect(|w| {
        w.images
            .values()
            .find(|i| {
                i.labels.get("version").map(String::as_str) == Some(version)
                    && i.labels.get("arch").map(String::as_str) == Some(arch)
            })
            .map(|i| i.id)
            .unwrap()
    })
}

/// The sim's servers but the seed's NAT gateway: the cluster's.
pub fn cluster_servers(w: &World) -> impl Iterator<Item = &Server> {
    w.servers
        .values()
        .filter(|s| !hct_sim::seed::is_seeded(&s.labels))
}

/// The cluster's server ids, by name.
pub fn server_ids(sim: &SimHandle) -> BTreeMap<String, i64> {
    sim.inspect(|w| cluster_servers(w).map(|s| (s.name.clone(), s.id)).collect())
}

/// The Talos release each of the cluster's servers runs, by name.
pub fn releases(sim: &SimHandle) -> BTreeMap<String, String> {
    sim.inspect(|w| {
        cluster_servers(w)
            .map(|s| {
                let release = s.talos.as_ref().map(|t| t.version.clone());
                (s.name.clone(), release.unwrap_or_default())
            })
            .collect()
    })
}

/// Deletes the cluster's server `name` through the Hetzner API, as a user
/// would, and waits for it to go.
pub fn delete_server(sim: &SimHandle, name: &str) {
    let id = server_ids(sim)[name];
    let client = client(sim);
    tokio::runtime::Handle::current().block_on(async {
        if let Some(action) = client.delete_server(id).await.unwrap() {
            client
                .wait_for_actions(vec![action], "delete", Duration::from_secs(30))
                .await
                .unwrap();
        }
    });
}

/// Powers off the cluster's server `name` through the Hetzner API, as a
/// user would, and waits until it is off.
pub fn power_off_server(sim: &SimHandle, name: &str) {
    let id = server_ids(sim)[name];
    let client = client(sim);
    tokio::runtime::Handle::current().block_on(async {
        let action = client.power_off(id).await.unwrap();
        client
            .wait_for_actions(vec![action], "power off", Duration::from_secs(30))
            .await
            .unwrap();
    });
}

/// How many Talos calls the sim took so far: where a later
/// [`talos_calls_since`] starts.
pub fn talos_calls_count(sim: &SimHandle) -> usize {
    sim.inspect(|w| w.talos_calls.len())
}

/// The Talos calls after the first `since` of the sim's log that are one of
/// `calls` (`Bootstrap`, `EtcdRecover`, …).
pub fn talos_calls_since(sim: &SimHandle, since: usize, calls: &[&str]) -> Vec<TalosCall> {
    sim.inspect(|w| {
        w.talos_calls
            .iter()
            .skip(since)
            .filter(|c| calls.contains(&c.call.as_str()))
            .cloned()
            .collect()
    })
}

/// The servers whose node holds etcd data (founded or joined an etcd).
pub fn servers_with_etcd_data(sim: &SimHandle) -> BTreeSet<Id> {
    sim.inspect(|w| {
        w.servers
            .iter()
            .filter(|(_, s)| {
                s.talos
                    .as_ref()
                    .is_some_and(|t| !t.node.disk.etcd.is_empty())
            })
            .map(|(id, _)| *id)
            .collect()
    })
}

/// How many requests of `route` (e.g. `DELETE /servers/{id}`) the sim took.
pub fn requests_of(sim: &SimHandle, route: &str) -> usize {
    sim.requests().iter().filter(|r| r.route == route).count()
}

/// Labels from pairs.
pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A private-only Debian worker of the cluster `test` at `ip` on `network`.
pub fn private_server(network: i64, name: &str, ip: &str) -> PrivateServer {
    PrivateServer {
        name: name.into(),
        server_type: "cx23".into(),
        location: "nbg1".into(),
        image: "debian-13".into(),
        network,
        ip: ip.parse().unwrap(),
        placement_group: None,
        labels: labels(&[("cluster", "test"), ("role", "worker")]),
        user_data: Some("#cloud-config\n".into()),
        ssh_keys: vec![],
    }
}

/// The seeded emulator with the real Kubernetes control plane of
/// `scripts/ensure-peers` (etcd, kube-apiserver, kube-controller-manager;
/// kubelet-csr-approver and Hetzner's CCM unless skipped without
/// `../shared`) behind every cluster of its release.
/// With `HCT_SIM_KUBERNETES=emulated` (`scripts/test`'s OpenTofu pass:
/// what the real components judge does not depend on the CLI, and they
/// cost a pass minutes of CPU) it is [`start`], and says so.
pub async fn start_with_real_kubernetes() -> SimHandle {
    if !real_kubernetes_wanted() {
        log_if_asked();
        eprintln!(
            "HCT_SIM_KUBERNETES=emulated: the emulated Kubernetes API server stands in for the real one"
        );
        return start().await;
    }
    start_on_real_kubernetes().await
}

/// The seeded emulator with the real Kubernetes control plane, whatever
/// `HCT_SIM_KUBERNETES` says: for what the real components should judge
/// under both CLIs (`real_kube_e2e`'s reference cluster, `kubeconfig_e2e`'s
/// ephemeral credentials, which are each CLI's own).
pub async fn start_on_real_kubernetes() -> SimHandle {
    log_if_asked();
    Sim::start(SimOptions {
        kubernetes: Some(real_kubernetes()),
        ..SimOptions::seeded_fast()
    })
    .await
    .unwrap()
}

/// Whether the real control plane is wanted: unless
/// `HCT_SIM_KUBERNETES=emulated`.
pub fn real_kubernetes_wanted() -> bool {
    std::env::var("HCT_SIM_KUBERNETES").map_or(true, |v| v != "emulated")
}

/// The real Kubernetes components of the peers, working in the system's
/// temporary directory.
pub fn real_kubernetes() -> hct_sim::KubeBinaries {
    let peers = crate::peers::peers();
    let unless_skipped =
        |piece: &str| (peers.var(&format!("{piece}_SKIPPED")) != "1").then(|| peers.path(piece));
    hct_sim::KubeBinaries {
        etcd: peers.path("ETCD"),
        kube_apiserver: peers.path("KUBE_APISERVER"),
        kube_controller_manager: peers.path("KUBE_CONTROLLER_MANAGER"),
        csr_approver: unless_skipped("CSR_APPROVER"),
        hcloud_ccm: unless_skipped("HCLOUD_CCM"),
        etcdutl: Some(peers.path("ETCDUTL")),
        version: format!("v{}", peers.var("KUBE_CONTROL_PLANE_VERSION")),
        work_dir: std::env::temp_dir(),
    }
}

/// hct-sim's log on standard error when `HCT_SIM_LOG` holds a filter
/// (`hct_sim=debug`), for a test run with `--no-capture`.
fn log_if_asked() {
    if let Ok(filter) = std::env::var("HCT_SIM_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// Whether hct-sim's real control plane runs `piece` (`CSR_APPROVER`,
/// `HCLOUD_CCM`): built from `../shared/k8s-peers`, skipped without it.
/// When not, says that `what` is skipped.
pub fn real_addon_or_skip(piece: &str, what: &str) -> bool {
    let runs = crate::peers::peers().var(&format!("{piece}_SKIPPED")) != "1";
    if !runs {
        eprintln!(
            "SKIPPED: {what}: no {piece} (its source in ../shared/k8s-peers is not on this machine)"
        );
    }
    runs
}

/// The etcd clusters the sim's nodes run: per etcd cluster, its members
/// (hostname, up), by hostname.
pub fn etcd_rings(sim: &SimHandle) -> BTreeMap<u64, Vec<(String, bool)>> {
    let state = sim.state_json();
    let mut rings: BTreeMap<u64, Vec<(String, bool)>> = BTreeMap::new();
    for members in state["etcd"].as_object().unwrap().values() {
        for m in members.as_array().unwrap() {
            rings.entry(m["ring"].as_u64().unwrap()).or_default().push((
                m["hostname"].as_str().unwrap().to_string(),
                m["up"].as_bool().unwrap(),
            ));
        }
    }
    for members in rings.values_mut() {
        members.sort();
    }
    rings
}

/// One etcd, of the reference cluster's three control planes, all up;
/// on hct-sim's real control plane, the real etcd's members are those
/// three too (`assert_real_etcd_follows`).
pub fn assert_one_etcd_of_three(sim: &SimHandle, after: &str) {
    let rings = etcd_rings(sim);
    let expected: Vec<(String, bool)> = (1..=3)
        .map(|n| (format!("noreturn-cp-{n}"), true))
        .collect();
    assert_eq!(
        rings.into_values().collect::<Vec<_>>(),
        vec![expected],
        "one etcd of the three control planes, all up, after {after}"
    );
    assert_real_etcd_follows(sim, after);
}

/// Waits until a ring's real etcd is ready and none runs a member of node
/// `hostname` (its node is down: hct-sim stops the member at its next
/// pass); a failed ring fails it. Nothing to wait for on the emulated API
/// server.
pub fn await_real_etcd_stopped(sim: &SimHandle, hostname: &str) {
    if !sim.runs_real_kubernetes() {
        return;
    }
    let prefix = format!("{hostname}-");
    crate::support::eventually(
        &format!("the real etcd member of {hostname} stopped"),
        || {
            let state = sim.state_json();
            let rings: Vec<&serde_json::Value> = state["kubernetes"]
                .as_object()
                .into_iter()
                .flat_map(|rings| rings.values())
                .collect();
            if let Some(failed) = rings.iter().find(|r| r["status"] == "failed") {
                panic!("a real control plane failed: {failed}");
            }
            let running: Vec<String> = rings
                .iter()
                .filter(|ring| ring["status"] == "ready")
                .flat_map(|ring| ring["etcd_running"].as_array().cloned().unwrap_or_default())
                .filter_map(|name| name.as_str().map(String::from))
                .filter(|name| name.starts_with(&prefix))
                .collect();
            match rings.iter().any(|r| r["status"] == "ready") && running.is_empty() {
                true => Ok(()),
                false => Err((running, state["kubernetes"].clone())),
            }
        },
    );
}

/// On hct-sim's real control plane (none: nothing to check; a failed ring
/// fails it): every
/// ready ring's real etcd lists, by name (`<hostname>-<member id, hex>`),
/// the very members the emulation lists for that ring, within a couple of
/// minutes. What the emulation says of membership is then what etcd
/// itself took.
pub fn assert_real_etcd_follows(sim: &SimHandle, after: &str) {
    if !sim.runs_real_kubernetes() {
        return;
    }
    crate::support::eventually(
        &format!("the real etcd's members are the emulation's after {after}"),
        || real_etcd_is_emulations(&sim.state_json()),
    );
}

/// As [`assert_real_etcd_follows`], at once: right after an apply that
/// brought control planes up, every member the emulation lists is already
/// a started voter of the real etcd. hct's last wait for a control plane
/// is Talos' etcd health check, which passes only through a member that
/// votes (`hct_sim::talos::calls::etcd_health`); an apply that returned
/// while a new member was still a learner, or an old one still listed,
/// would leave the next change one failure from losing the quorum.
pub fn assert_real_etcd_votes_now(sim: &SimHandle, after: &str) {
    if !sim.runs_real_kubernetes() {
        return;
    }
    let state = sim.state_json();
    if let Err(compared) = real_etcd_is_emulations(&state) {
        panic!(
            "right after {after}, the real etcd's voters are not the emulation's members: {compared:#?}"
        );
    }
    // And each runs: the health check reads through the member itself.
    let rings = state["kubernetes"].as_object().unwrap();
    for (store, ring) in rings.iter().filter(|(_, r)| r["status"] == "ready") {
        let running = ring["etcd_running"].as_array().cloned().unwrap_or_default();
        for member in ring["etcd_members"].as_array().into_iter().flatten() {
            assert!(
                running.contains(&member["name"]),
                "right after {after}, {} of {store} does not run: {ring:#}",
                member["name"]
            );
        }
    }
}

/// Whether every ready ring's real etcd lists the emulation's members of
/// that ring, each started and a voter; Err with what was compared (or
/// the rings, if none is ready or one failed).
fn real_etcd_is_emulations(state: &serde_json::Value) -> Result<(), Vec<serde_json::Value>> {
    let mut compared = Vec::new();
    for (store, ring) in state["kubernetes"].as_object().unwrap() {
        if ring["status"] == "failed" {
            return Err(vec![ring.clone()]);
        }
        if ring["status"] != "ready" {
            continue;
        }
        let (cluster, number) = store.rsplit_once('/').unwrap();
        let number = u64::from_str_radix(number, 16).unwrap();
        let mut emulated: Vec<String> = state["etcd"][cluster]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["ring"] == number)
            .map(|m| {
                format!(
                    "{}-{:x}",
                    m["hostname"].as_str().unwrap(),
                    m["id"].as_u64().unwrap()
                )
            })
            .collect();
        emulated.sort();
        // A learner (still catching up) is not yet the emulation's voter.
        let mut real: Vec<String> = ring["etcd_members"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let name = m["name"].as_str().unwrap_or_default();
                match m["isLearner"].as_bool() {
                    Some(true) => format!("{name} (learner)"),
                    _ => name.to_string(),
                }
            })
            .collect();
        real.sort();
        compared.push(serde_json::json!({"ring": store, "emulated": emulated, "real": real}));
        if emulated != real {
            return Err(compared);
        }
    }
    if compared.is_empty() {
        return Err(vec![state["kubernetes"].clone()]);
    }
    Ok(())
}
