//! One ring's control plane from start to stop: its etcd members
//! (`etcd_ring`; the founder's data first restored from a snapshot when it
//! recovers, `restore`), its files, then kube-apiserver (waited for until
//! `/readyz` answers), then kube-controller-manager, each with the
//! arguments Talos gives it and the config's `extraArgs` on top (except
//! where they would listen: hct-sim listens on loopback only); then,
//! every couple of seconds until the task is aborted, and at once when the
//! emulation's etcd members change, the etcd members (kept in line with
//! the emulation's), Talos' bootstrap manifests (until
//! all exist, and again when they change), the emulated kubelets and the
//! add-ons; a problem that lasts is logged once. The registry says
//! Starting, Ready or Failed; a component that exits fails the whole (its
//! log's end in the message), a restore that fails at once.
//! Aborting the task kills the processes (they are dropped).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tracing::{info, warn};

use super::addons::Addons;
use super::bootstrap;
use super::client::{Client, ClientError};
use super::etcd_member::member_name;
use super::etcd_ring::{EtcdRing, Restorer, RingError, Wanted};
use super::files::{self, FilesError, Layout};
use super::kubelets::Kubelets;
use super::process::{Component, ProcessError, free_ports};
use super::spec::{ControlPlaneSpec, ServingNames, joined};
use super::{Endpoints, KubeBinaries, Status};
use crate::app::AppState;
use crate::clock::Timestamp;
use crate::events::SimEvent;
use crate::talos::kube_api::store::facts;
use crate::talos::lifecycle;
use crate::talos::manifests as rendered;
use crate::talos::pki::{self, PkiError};
use crate::talos::secret::Secret;
use crate::talos::{cluster, etcd};

/// How long kube-apiserver may take to answer `/readyz` with ok.
const READY_WAIT: Duration = Duration::from_secs(180);
const PASS: Duration = Duration::from_secs(2);
const ATTEMPTS: u32 = 3;
const STABLE: Duration = Duration::from_secs(60);
const RETRY_AFTER: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Files(#[from] FilesError),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Pki(#[from] PkiError),
    #[error(transparent)]
    Etcd(#[from] RingError),
    #[error("no free loopback port: {0}")]
    Port(std::io::Error),
    #[error("kube-apiserver did not become ready within {0:?}")]
    NotReady(Duration),
}

/// Runs `spec`'s control plane until aborted; when it fails (a port taken
/// in between, a component that exits), starts it again, a little later
/// each time. `ATTEMPTS` failures in a row, each within `STABLE` of its
/// start, make it give up: it says so in the registry and ends. A failure
/// after it ran that long starts the count anew.
pub async fn run(
    sim: AppState,
    binaries: KubeBinaries,
    spec: ControlPlaneSpec,
    names: watch::Receiver<ServingNames>,
) {
    let mut attempt = 0;
    loop {
        attempt += 1;
        sim.control_planes.set(&spec.store, Status::Starting);
        let started = std::time::Instant::now();
        let Err(e) = serve(&sim, &binaries, &spec, names.clone()).await;
        if started.elapsed() >= STABLE {
            attempt = 1;
        }
        // A snapshot that does not restore would not the next time either.
        if attempt >= ATTEMPTS || matches!(e, StartError::Etcd(RingError::Restore(_))) {
            warn!(
                cluster = spec.cluster_name,
                "real control plane gives up: {e}"
            );
            sim.control_planes
                .set(&spec.store, Status::Failed(e.to_string()));
            return;
        }
        warn!(
            cluster = spec.cluster_name,
            "real control plane (attempt {attempt} of {ATTEMPTS}): {e}"
        );
        tokio::time::sleep(RETRY_AFTER * attempt).await;
    }
}

async fn serve(
    sim: &AppState,
    binaries: &KubeBinaries,
    spec: &ControlPlaneSpec,
    mut names: watch::Receiver<ServingNames>,
) -> Result<std::convert::Infallible, StartError> {
    let layout = Layout::of(&binaries.work_dir, &spec.store);
    let [api_port] = free_ports().map_err(StartError::Port)?;
    let base = format!("https://127.0.0.1:{api_port}");
    let mut said = Said::default();
    let restorer = Restorer {
        sim,
        binaries,
        store: &spec.store,
    };
    let mut etcd = EtcdRing::open(&binaries.etcd, &layout)?;
    let problems = etcd
        .reconcile(&read_world(sim, spec).members, Some(&restorer))
        .await?;
    said.say(&spec.cluster_name, "etcd members", &problems);
    files::write(&layout, spec, &base)?;
    let api_args = api_server_args(spec, &layout, api_port, etcd.front());
    let mut api_server = Component::spawn(
        "kube-apiserver",
        &binaries.kube_apiserver,
        &api_args,
        &layout.dir,
    )?;
    let admin_user = pki::client_certificate(&spec.kubernetes_ca, "hct-sim", &["system:masters"])?;
    let admin = Client::new(&base, &spec.kubernetes_ca, &admin_user)?;
    let deadline = tokio::time::Instant::now() + READY_WAIT;
    loop {
        etcd.check()?;
        api_server.check()?;
        let problems = etcd
            .reconcile(&read_world(sim, spec).members, Some(&restorer))
            .await?;
        said.say(&spec.cluster_name, "etcd members", &problems);
        publish_etcd(sim, spec, &etcd).await;
        if admin.get("/readyz").await.is_ok_and(|a| a.ok()) {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(StartError::NotReady(READY_WAIT));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let manager_args = controller_manager_args(spec, &layout);
    let mut manager = Component::spawn(
        "kube-controller-manager",
        &binaries.kube_controller_manager,
        &manager_args,
        &layout.dir,
    )?;
    info!(
        cluster = spec.cluster_name,
        "real control plane serving at {base}"
    );
    sim.control_planes.set(
        &spec.store,
        Status::Ready(Endpoints {
            api: SocketAddr::from(([127, 0, 0, 1], api_port)),
            etcd: etcd.front(),
        }),
    );
    let mut kubelets = Kubelets::new(
        &base,
        &spec.kubernetes_ca,
        spec.settings.external_cloud_provider(),
    );
    let mut applied: Option<Vec<(String, serde_json::Value)>> = None;
    let hetzner_api = sim.api_url.get().cloned().unwrap_or_default();
    let mut addons = Addons::new(
        binaries.csr_approver.clone(),
        binaries.hcloud_ccm.clone(),
        hetzner_api,
    );
    // Subscribed before the first pass: a change while a pass runs wakes
    // the next at once.
    let mut events = sim.events.subscribe();
    loop {
        etcd.check()?;
        for component in [&mut api_server, &mut manager] {
            component.check()?;
        }
        if names.has_changed().unwrap_or(false) {
            let current = names.borrow_and_update().clone();
            files::serving_certificate(&layout, spec, &current)?;
        }
        // What was said up to now, this pass reads (its own reading of the
        // world may say it again: that wakes one more pass, no more).
        said_so_far(&mut events);
        let seen = read_world(sim, spec);
        let problems = etcd.reconcile(&seen.members, Some(&restorer)).await?;
        said.say(&spec.cluster_name, "etcd members", &problems);
        publish_etcd(sim, spec, &etcd).await;
        // Talos creates what is missing at start and whenever the
        // manifests change.
        if applied.as_ref() != Some(&seen.objects) {
            let mut problems = seen.problems.clone();
            match bootstrap::create_missing(&admin, &seen.objects).await {
                Ok(missing) if missing.is_empty() => applied = Some(seen.objects.clone()),
                Ok(missing) => problems.extend(missing),
                Err(e) => problems.push(e.to_string()),
            }
            said.say(&spec.cluster_name, "bootstrap manifests", &problems);
        }
        // Without Hetzner's CCM, whose node lifecycle controller deletes
        // the Node of a server that is gone, the kubelets' pass does.
        let delete_gone = !addons.ccm_runs();
        match kubelets
            .sync(
                &admin,
                &seen.facts,
                delete_gone.then_some(&seen.servers),
                &seen.tokens,
                Timestamp::now().unix_seconds(),
            )
            .await
        {
            Ok(nodes) => {
                sim.control_planes.set_nodes(&spec.store, nodes);
                said.say(
                    &spec.cluster_name,
                    "emulated kubelets",
                    &kubelets.problems(),
                );
            }
            Err(e) => said.say(&spec.cluster_name, "emulated kubelets", &[e.to_string()]),
        }
        addons.sync(&admin, spec, &layout, &base).await;
        tokio::select! {
            () = tokio::time::sleep(PASS) => {}
            () = members_changed(&mut events, &spec.cluster.id) => {}
        }
    }
}

/// Takes what `events` holds: a pass about to read the world reads it.
fn said_so_far(events: &mut broadcast::Receiver<SimEvent>) {
    while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = events.try_recv() {}
}

/// Until the emulation says the etcd members of cluster `id`, or which of
/// them run, changed (`SimEvent::EtcdMembers`), so that the real members
/// follow at once: a node powered off stops its member then, as etcd stops
/// with its node. A receiver that fell behind may have missed one: that
/// counts as a change.
async fn members_changed(events: &mut broadcast::Receiver<SimEvent>, id: &str) {
    loop {
        match events.recv().await {
            Ok(SimEvent::EtcdMembers { cluster, .. }) if cluster == id => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// What the ring's real etcd lists, and which members run, for the
/// registry (EtcdMemberList, `/_sim/state`).
async fn publish_etcd(sim: &AppState, spec: &ControlPlaneSpec, etcd: &EtcdRing) {
    let members = etcd.members().await.ok();
    sim.control_planes
        .set_etcd(&spec.store, members, etcd.running());
}

/// What a pass reads of the world: the cluster's nodes as its kubelets see
/// them, the bootstrap manifests of a control plane of the cluster that
/// runs (and what Talos would report of them), and every server's name.
struct Seen {
    facts: Vec<crate::kube::nodes::NodeFacts>,
    objects: Vec<(String, serde_json::Value)>,
    problems: Vec<String>,
    servers: BTreeSet<String>,
    /// Each configured node's bootstrap token, by node name.
    tokens: BTreeMap<String, Secret>,
    /// The ring's etcd members as the emulation lists them.
    members: Vec<Wanted>,
}

fn read_world(sim: &AppState, spec: &ControlPlaneSpec) -> Seen {
    let (facts, serving, servers, tokens, members) = {
        let mut world = sim.world();
        let now = world.now;
        lifecycle::settle(&mut world, now);
        let serving = world.servers.values().find_map(|server| {
            let talos = server.talos.as_ref()?;
            let config = talos
                .node
                .config()
                .filter(|c| c.is_control_plane() && c.cluster == spec.cluster)?;
            Some((config.clone(), lifecycle::running_version(talos)?))
        });
        let servers = world.servers.values().map(|s| s.name.clone()).collect();
        let tokens = world
            .servers
            .values()
            .filter_map(|server| {
                let config = server.talos.as_ref()?.node.config()?;
                (config.cluster == spec.cluster).then(|| {
                    (
                        cluster::hostname(server, Some(config)),
                        config.bootstrap_token.clone(),
                    )
                })
            })
            .collect();
        let members = etcd::members(&world, &spec.cluster, spec.ring)
            .into_iter()
            .map(|m| Wanted {
                name: member_name(&m.hostname, m.id),
                up: m.up,
            })
            .collect();
        (
            facts(&world, &spec.cluster),
            serving,
            servers,
            tokens,
            members,
        )
    };
    let mut objects = Vec::new();
    let mut problems = Vec::new();
    if let Some((config, talos)) = serving {
        for manifest in rendered::render(&config, &talos, &mut problems) {
            for object in manifest.objects {
                objects.push((manifest.id.clone(), object));
            }
        }
    }
    Seen {
        facts,
        objects,
        problems,
        servers,
        tokens,
        members,
    }
}

/// The problems last logged per topic: a warning only when they change, so
/// that one that lasts is said once, not every pass.
#[derive(Default)]
struct Said(BTreeMap<&'static str, Vec<String>>);

impl Said {
    fn say(&mut self, cluster: &str, topic: &'static str, problems: &[String]) {
        if self.0.get(topic).map(Vec::as_slice) == Some(problems) {
            return;
        }
        for problem in problems {
            warn!(cluster, "{topic}: {problem}");
        }
        self.0.insert(topic, problems.to_vec());
    }
}

/// Talos' own arguments, the config's extra ones over them, then where it
/// listens.
fn with_extra(
    mut args: BTreeMap<String, String>,
    extra: &BTreeMap<String, String>,
    listen: &[(&str, String)],
) -> Vec<String> {
    args.extend(extra.clone());
    for (flag, value) in listen {
        args.insert(flag.to_string(), value.clone());
    }
    args.into_iter()
        .map(|(k, v)| format!("--{k}={v}"))
        .collect()
}

fn api_server_args(
    spec: &ControlPlaneSpec,
    layout: &Layout,
    port: u16,
    etcd: SocketAddr,
) -> Vec<String> {
    let path = |name: &str| layout.path(name).display().to_string();
    let mut args: BTreeMap<String, String> = [
        ("allow-privileged", "true".to_string()),
        ("api-audiences", spec.endpoint.clone()),
        ("authentication-config", path("authentication.json")),
        ("authorization-mode", "Node,RBAC".into()),
        ("client-ca-file", path("pki/ca.crt")),
        ("enable-admission-plugins", "NodeRestriction".into()),
        ("enable-bootstrap-token-auth", "true".into()),
        ("etcd-servers", format!("http://{etcd}")),
        (
            "kubelet-preferred-address-types",
            "InternalIP,ExternalIP,Hostname".into(),
        ),
        ("profiling", "false".into()),
        ("service-account-issuer", spec.endpoint.clone()),
        ("service-account-key-file", path("pki/sa.key")),
        ("service-account-signing-key-file", path("pki/sa.key")),
        ("service-cluster-ip-range", joined(&spec.services)),
        ("tls-cert-file", path("pki/apiserver.crt")),
        ("tls-private-key-file", path("pki/apiserver.key")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if spec.settings.encryption.is_some() {
        args.insert("encryption-provider-config".into(), path("encryption.json"));
    }
    if spec.tls13_only {
        args.insert("tls-min-version".into(), "VersionTLS13".into());
    }
    if let Some(ip) = spec.names.ips.first() {
        args.insert("advertise-address".into(), ip.to_string());
    }
    with_extra(
        args,
        &spec.settings.api_server_args,
        &[
            ("bind-address", "127.0.0.1".into()),
            ("secure-port", port.to_string()),
        ],
    )
}

fn controller_manager_args(spec: &ControlPlaneSpec, layout: &Layout) -> Vec<String> {
    let path = |name: &str| layout.path(name).display().to_string();
    let kubeconfig = path("controller-manager.kubeconfig");
    let args: BTreeMap<String, String> = [
        ("allocate-node-cidrs", "true".to_string()),
        ("authentication-kubeconfig", kubeconfig.clone()),
        ("authorization-kubeconfig", kubeconfig.clone()),
        ("cluster-cidr", joined(&spec.pods)),
        ("cluster-name", spec.cluster_name.clone()),
        ("cluster-signing-cert-file", path("pki/ca.crt")),
        ("cluster-signing-key-file", path("pki/ca.key")),
        ("controllers", "*,bootstrapsigner,tokencleaner".into()),
        ("configure-cloud-routes", "false".into()),
        ("kubeconfig", kubeconfig),
        // One of it per ring (Talos runs one per control plane, electing a
        // leader): no lease to wait for when it restarts.
        ("leader-elect", "false".into()),
        (
            "node-cidr-mask-size-ipv4",
            spec.node_cidr_mask_ipv4.to_string(),
        ),
        ("profiling", "false".into()),
        ("root-ca-file", path("pki/ca.crt")),
        ("service-account-private-key-file", path("pki/sa.key")),
        ("service-cluster-ip-range", joined(&spec.services)),
        ("use-service-account-credentials", "true".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    with_extra(
        args,
        &spec.settings.controller_manager_args,
        &[
            ("bind-address", "127.0.0.1".into()),
            ("secure-port", "0".into()),
        ],
    )
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod tests;
