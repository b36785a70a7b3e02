//! Keeps an emulated apid running for every node that should answer, and
//! only for those: a running Talos on a server with a private address, not
//! made unreachable by a fault, and (configured) holding its certificate.
//! Each apid is registered with the proxy as the server's port 50000, so
//! clients dial `<private-ip>:50000` as on Hetzner. Likewise a Kubernetes
//! API server (`kube_api`) on port 6443 of each control plane whose etcd
//! member runs, and, given the binaries, the real control plane of each
//! etcd ring of their release (`kube_control_plane`), started in its own
//! task and restarted when what it runs with changes. Every tick it brings
//! the nodes up to now and says when a cluster's etcd members, or which of
//! them run, changed (`etcd::watch`), for the real etcd to follow. An
//! endpoint that someone else registered for that port is left alone.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::warn;

use super::apid::{APID_PORT, Apid, ApidMode, ApidSpec};
use super::calls::NodeRef;
use super::kube_api::{self, KUBE_API_PORT, KubeApi, KubeApiSpec};
use super::kube_control_plane::spec::{ServingNames, store_of};
use super::kube_control_plane::{self as real, ControlPlaneSpec, start};
use super::{cluster, faults, lifecycle};
use crate::app::{AppState, lock};
use crate::ids::Id;
use crate::resources::servers::Server;
use crate::state::World;

const TICK: Duration = Duration::from_millis(50);

pub async fn supervise(sim: AppState, mut stop: watch::Receiver<bool>) {
    let mut supervisor = Supervisor {
        sim,
        apids: Pool::default(),
        kube_apis: Pool::default(),
        control_planes: BTreeMap::new(),
    };
    loop {
        supervisor.reconcile().await;
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => break,
        }
    }
    supervisor.apids.stop_all(&supervisor.sim);
    supervisor.kube_apis.stop_all(&supervisor.sim);
    for (store, running) in std::mem::take(&mut supervisor.control_planes) {
        running.task.abort();
        supervisor.sim.control_planes.remove(&store);
    }
}

/// A server that stands in for one port of a node.
trait Served: Sized {
    type Spec: Clone + PartialEq;
    const PORT: u16;
    const NAME: &'static str;

    fn start(sim: AppState, spec: Self::Spec) -> impl Future<Output = Result<Self, String>> + Send;
    fn spec(&self) -> &Self::Spec;
    fn addr(&self) -> SocketAddr;
    fn stop(self);
}

impl Served for Apid {
    type Spec = ApidSpec;
    const PORT: u16 = APID_PORT;
    const NAME: &'static str = "apid";

    async fn start(sim: AppState, spec: ApidSpec) -> Result<Self, String> {
        Apid::start(sim, spec).await.map_err(|e| e.to_string())
    }

    fn spec(&self) -> &ApidSpec {
        &self.spec
    }

    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn stop(self) {
        Apid::stop(self);
    }
}

impl Served for KubeApi {
    type Spec = KubeApiSpec;
    const PORT: u16 = KUBE_API_PORT;
    const NAME: &'static str = "Kubernetes API server";

    async fn start(sim: AppState, spec: KubeApiSpec) -> Result<Self, String> {
        KubeApi::start(sim, spec).await.map_err(|e| e.to_string())
    }

    fn spec(&self) -> &KubeApiSpec {
        &self.spec
    }

    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn stop(self) {
        KubeApi::stop(self);
    }
}

/// The running servers of one kind, one per node.
struct Pool<S: Served> {
    running: BTreeMap<Id, S>,
    /// Specs that could not start, so that they are not retried every tick.
    failed: BTreeMap<Id, S::Spec>,
}

impl<S: Served> Default for Pool<S> {
    fn default() -> Self {
        Self {
            running: BTreeMap::new(),
            failed: BTreeMap::new(),
        }
    }
}

impl<S: Served> Pool<S> {
    async fn reconcile(&mut self, sim: &AppState, wanted: BTreeMap<Id, S::Spec>) {
        let outdated: Vec<Id> = self
            .running
            .iter()
            .filter(|(id, served)| wanted.get(id) != Some(served.spec()))
            .map(|(id, _)| *id)
            .collect();
        for id in outdated {
            if let Some(served) = self.running.remove(&id) {
                withdraw(sim, id, S::PORT, served.addr());
                served.stop();
            }
        }
        self.failed.retain(|id, spec| wanted.get(id) == Some(spec));
        for (id, spec) in wanted {
            if self.running.contains_key(&id)
                || self.failed.contains_key(&id)
                || lock(&sim.endpoints).contains_key(&(id, S::PORT))
            {
                continue;
            }
            match S::start(sim.clone(), spec.clone()).await {
                Ok(served) => {
                    lock(&sim.endpoints)
                        .entry((id, S::PORT))
                        .or_insert(served.addr());
                    self.running.insert(id, served);
                }
                Err(e) => {
                    warn!(server = id, "cannot start the emulated {}: {e}", S::NAME);
                    self.failed.insert(id, spec);
                }
            }
        }
    }

    fn stop_all(&mut self, sim: &AppState) {
        for (id, served) in std::mem::take(&mut self.running) {
            withdraw(sim, id, S::PORT, served.addr());
            served.stop();
        }
    }
}

/// Unregisters a server's port, unless the endpoint now leads elsewhere.
fn withdraw(sim: &AppState, id: Id, port: u16, addr: SocketAddr) {
    let mut endpoints = lock(&sim.endpoints);
    if endpoints.get(&(id, port)) == Some(&addr) {
        endpoints.remove(&(id, port));
    }
}

/// A real control plane's task, what it was started with, and where its
/// serving names are sent.
struct RealControlPlane {
    spec: ControlPlaneSpec,
    names: watch::Sender<ServingNames>,
    task: JoinHandle<()>,
}

struct Supervisor {
    sim: AppState,
    apids: Pool<Apid>,
    kube_apis: Pool<KubeApi>,
    /// The real control planes by store id (`kube_control_plane`).
    control_planes: BTreeMap<String, RealControlPlane>,
}

impl Supervisor {
    async fn reconcile(&mut self) {
        let (apids, kube_apis, control_planes) = self.wanted();
        self.reconcile_control_planes(control_planes);
        self.apids.reconcile(&self.sim, apids).await;
        self.kube_apis.reconcile(&self.sim, kube_apis).await;
    }

    /// Starts the real control planes wanted and not running with that
    /// spec, and stops the others. One that failed stays failed until its
    /// spec changes.
    fn reconcile_control_planes(&mut self, wanted: BTreeMap<String, ControlPlaneSpec>) {
        let Some(binaries) = self.sim.kube_binaries.clone() else {
            return;
        };
        self.control_planes.retain(|store, running| {
            let keep = wanted
                .get(store)
                .is_some_and(|spec| spec.same_components(&running.spec));
            if !keep {
                running.task.abort();
                self.sim.control_planes.remove(store);
            }
            keep
        });
        for (store, spec) in wanted {
            match self.control_planes.get_mut(&store) {
                Some(running) => {
                    running.names.send_if_modified(|names| {
                        let changed = *names != spec.names;
                        *names = spec.names.clone();
                        changed
                    });
                }
                None => {
                    let (names, watched) = watch::channel(spec.names.clone());
                    let task = tokio::spawn(start::run(
                        self.sim.clone(),
                        binaries.clone(),
                        spec.clone(),
                        watched,
                    ));
                    self.control_planes
                        .insert(store, RealControlPlane { spec, names, task });
                }
            }
        }
    }

    /// Brings the nodes up to now, then says which apids, Kubernetes API
    /// servers and real control planes should run.
    fn wanted(
        &self,
    ) -> (
        BTreeMap<Id, ApidSpec>,
        BTreeMap<Id, KubeApiSpec>,
        BTreeMap<String, ControlPlaneSpec>,
    ) {
        let mut world = self.sim.world();
        let now = world.now;
        let updates = lifecycle::plan(&world, now);
        if !updates.is_empty() {
            lifecycle::apply(&mut world, updates, now);
        }
        // Said at once (`SimEvent::EtcdMembers`), for the real etcd to
        // follow; the world is touched only then.
        if super::etcd::changed(&world) {
            super::etcd::watch(&mut world);
        }
        let apids = world
            .servers
            .values()
            .filter_map(|server| spec(&world, server))
            .map(|spec| (spec.node.server, spec))
            .collect();
        let release = self.sim.kube_binaries.as_ref().map(|b| b.version.as_str());
        let kube_apis: BTreeMap<Id, KubeApiSpec> = world
            .servers
            .values()
            .filter_map(|server| {
                let mut spec = kube_api::spec(&world, server)?;
                spec.real = release.and_then(|r| store_of(server, r));
                Some((spec.node.server, spec))
            })
            .collect();
        let control_planes =
            release.map_or_else(BTreeMap::new, |r| real::wanted(&world, r, &kube_apis));
        (apids, kube_apis, control_planes)
    }
}

fn spec(world: &World, server: &Server) -> Option<ApidSpec> {
    let talos = server.talos.as_ref()?;
    if !talos.node.is_running() || faults::is_unreachable(&world.config.talos_faults, server) {
        return None;
    }
    let ips = server.private_ips();
    if ips.is_empty() {
        return None;
    }
    let mode = match talos.node.config() {
        None => ApidMode::Maintenance,
        Some(config) => ApidMode::Configured {
            issuer: talos.node.run.apid_issuer.clone()?,
            trusted: config.os_ca.certificate.clone(),
            hostname: cluster::hostname(server, Some(config)),
        },
    };
    Some(ApidSpec {
        node: NodeRef {
            server: server.id,
            incarnation: talos.node.run.incarnation,
        },
        ips,
        mode,
    })
}
