//! Starting and stopping the emulator, and the handle tests hold on to.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::middleware::from_fn_with_state;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::app::{AppState, Shared, lock};
use crate::clock::Timestamp;
use crate::durations::{Durations, Profile};
use crate::events::SimEvent;
use crate::faults::{ActionFailure, FaultSpec, RouteFaults};
use crate::ids::Id;
use crate::persist::{self, PersistError};
use crate::ratelimit::RateLimiter;
use crate::rescue::RescueFault;
use crate::state::{World, WorldConfig};
use crate::talos::faults::{GrpcCode, ServerRef, TalosFault};
pub use crate::talos::kube_control_plane::KubeBinaries;
use crate::talos::kube_control_plane::WorkDir;
use crate::{admin, api, gateway, rescue, seed, socks5, talos};

/// How often due actions are finished when nobody asks.
const TICK: Duration = Duration::from_millis(50);

#[derive(Debug, Clone)]
pub struct SimOptions {
    /// API address; port 0 picks a free port. Must be loopback.
    pub listen: SocketAddr,
    /// SOCKS5 proxy address; port 0 picks a free port. Must be loopback.
    pub proxy_listen: SocketAddr,
    /// The bearer token clients must send.
    pub token: String,
    /// Add the network and Talos snapshots an hct cluster expects.
    pub seed: bool,
    /// Load from and save to this file.
    pub state_file: Option<PathBuf>,
    /// Requests per hour.
    pub rate_limit: u32,
    pub durations: Durations,
    pub faults: Vec<FaultSpec>,
    /// Seed for the randomness of probabilistic faults.
    pub fault_seed: Option<u64>,
    /// Real etcd, kube-apiserver and kube-controller-manager to run behind
    /// the clusters of their Kubernetes release (`talos::kube_control_plane`);
    /// without them every cluster's Kubernetes API is emulated.
    pub kubernetes: Option<KubeBinaries>,
}

impl SimOptions {
    /// What tests start: the seeded network and Talos snapshots, with actions
    /// that finish in moments.
    pub fn seeded_fast() -> Self {
        Self {
            seed: true,
            durations: Durations::new(Profile::Fast),
            ..Self::default()
        }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            proxy_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: "hct-sim".into(),
            seed: false,
            state_file: None,
            rate_limit: 3600,
            durations: Durations::default(),
            faults: Vec::new(),
            fault_seed: None,
            kubernetes: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("refusing to listen on {0}: hct-sim only listens on loopback addresses")]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] PersistError),
    #[error("cannot seed the project: {0}")]
    Seed(String),
    #[error("{0} is not on 127.0.0.0/8; the proxy only connects to loopback")]
    TargetNotLoopback(SocketAddr),
    #[error("no server, or more than one (networks overlap), has the private IP {0}")]
    UnknownPrivateIp(Ipv4Addr),
    #[error("server {0} not found")]
    UnknownServer(Id),
    #[error("cannot make a directory in {path} for the Kubernetes components: {source}")]
    WorkDir {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub struct Sim;

impl Sim {
    /// Binds both listeners and serves until the handle is shut down or dropped.
    pub async fn start(options: SimOptions) -> Result<SimHandle, SimError> {
        for addr in [options.listen, options.proxy_listen] {
            if !addr.ip().is_loopback() {
                return Err(SimError::NotLoopback(addr));
            }
        }
        let shared = Arc::new(build_shared(&options)?);

        let bind = |addr: SocketAddr| async move {
            TcpListener::bind(addr)
                .await
                .map_err(|source| SimError::Bind { addr, source })
        };
        let api_listener = bind(options.listen).await?;
        let proxy_listener = bind(options.proxy_listen).await?;
        let local = |l: &TcpListener, addr| {
            l.local_addr()
                .map_err(|source| SimError::Bind { addr, source })
        };
        let api_addr = local(&api_listener, options.listen)?;
        let proxy_addr = local(&proxy_listener, options.proxy_listen)?;
        let _ = shared.api_url.set(format!("http://{api_addr}/v1"));

        let (stop, stopped) = watch::channel(false);
        let mut tasks = Vec::new();
        let app = router(shared.clone());
        let mut api_stop = stopped.clone();
        tasks.push(tokio::spawn(async move {
            let served = axum::serve(api_listener, app)
                .with_graceful_shutdown(async move {
                    let _ = api_stop.changed().await;
                })
                .await;
            if let Err(e) = served {
                tracing::error!("API server failed: {e}");
            }
        }));
        tasks.push(tokio::spawn(socks5::serve(
            proxy_listener,
            shared.clone(),
            stopped.clone(),
        )));
        tasks.push(tokio::spawn(tick(shared.clone(), stopped.clone())));
        tasks.push(tokio::spawn(talos::supervisor::supervise(
            shared.clone(),
            stopped.clone(),
        )));
        tasks.push(tokio::spawn(rescue::supervisor::supervise(
            shared.clone(),
            stopped.clone(),
        )));
        if let Some(path) = options.state_file.clone() {
            tasks.push(tokio::spawn(persist::keep_saved(
                shared.clone(),
                path,
                stopped,
            )));
        }
        Ok(SimHandle {
            shared,
            api_addr,
            proxy_addr,
            stop,
            tasks,
            state_file: options.state_file,
        })
    }
}

fn build_shared(options: &SimOptions) -> Result<Shared, SimError> {
    let mut route_rules = Vec::new();
    let mut action_failures = Vec::new();
    let mut talos_faults = Vec::new();
    let mut rescue_faults = Vec::new();
    for fault in &options.faults {
        match fault.clone() {
            FaultSpec::Route(rule) => route_rules.push(rule),
            FaultSpec::Action(failure) => action_failures.push(failure),
            FaultSpec::Talos(fault) => talos_faults.push(fault),
            FaultSpec::Rescue(fault) => rescue_faults.push(fault),
        }
    }
    let loaded = match &options.state_file {
        Some(path) => persist::load(path)?,
        None => None,
    };
    let fresh = loaded.is_none();
    let mut world = loaded.unwrap_or_default();
    world.config = WorldConfig {
        durations: options.durations.clone(),
        action_failures,
        talos_faults,
        rescue_faults,
    };
    seed::system_images(&mut world);
    if fresh && options.seed {
        seed::hct_project(&mut world, Timestamp::now())
            .map_err(|e| SimError::Seed(e.to_string()))?;
    }
    let mut shared = Shared::new(
        world,
        options.token.clone(),
        RateLimiter::per_hour(options.rate_limit),
        RouteFaults::new(route_rules, options.fault_seed),
    );
    if let Some(binaries) = &options.kubernetes {
        let work = WorkDir::create(&binaries.work_dir).map_err(|source| SimError::WorkDir {
            path: binaries.work_dir.clone(),
            source,
        })?;
        shared.kube_binaries = Some(KubeBinaries {
            work_dir: work.path().to_path_buf(),
            ..binaries.clone()
        });
        shared.kube_work_dir = Some(work);
    }
    Ok(shared)
}

pub(crate) fn router(shared: AppState) -> Router {
    Router::new()
        .nest("/v1", api::router(shared.clone()))
        .nest("/_sim", admin::router(shared.clone()))
        .fallback(gateway::fallback)
        .layer(from_fn_with_state(shared.clone(), gateway::correlate))
        .with_state(shared)
}

/// Finishes due actions even when no request comes, so events fire on time.
async fn tick(sim: AppState, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(TICK) => drop(sim.world()),
            _ = stop.changed() => return,
        }
    }
}

/// A running emulator. Dropping it stops the servers; [`SimHandle::shutdown`]
/// also waits for them and saves the state.
pub struct SimHandle {
    shared: AppState,
    api_addr: SocketAddr,
    proxy_addr: SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    state_file: Option<PathBuf>,
}

impl SimHandle {
    /// What `HCLOUD_ENDPOINT` should be: `http://127.0.0.1:PORT/v1`.
    pub fn endpoint(&self) -> String {
        format!("http://{}/v1", self.api_addr)
    }

    pub fn api_addr(&self) -> SocketAddr {
        self.api_addr
    }

    pub fn proxy_addr(&self) -> SocketAddr {
        self.proxy_addr
    }

    /// `socks5://127.0.0.1:PORT`.
    pub fn proxy_url(&self) -> String {
        format!("socks5://{}", self.proxy_addr)
    }

    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// Whether real Kubernetes components stand behind the clusters of
    /// their release (`SimOptions::kubernetes`).
    pub fn runs_real_kubernetes(&self) -> bool {
        self.shared.kube_binaries.is_some()
    }

    /// The state as `GET /_sim/state` shows it.
    pub fn state_json(&self) -> Value {
        self.shared.state_json()
    }

    /// Looks at the world (with due actions finished).
    pub fn inspect<R>(&self, look: impl FnOnce(&World) -> R) -> R {
        look(&self.shared.world())
    }

    /// Changes the world directly, e.g. to set up a test.
    pub fn modify<R>(&self, change: impl FnOnce(&mut World) -> R) -> R {
        change(&mut self.shared.world())
    }

    /// Requests per route so far, e.g. `{"POST /servers": 3}`.
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        lock(&self.shared.requests).counts()
    }

    /// The latest requests (up to 10 000), oldest first: a route that
    /// matched none of the API's is logged as `METHOD /v1/...`.
    pub fn requests(&self) -> Vec<crate::requests::Entry> {
        lock(&self.shared.requests).entries()
    }

    pub fn add_fault(&self, fault: FaultSpec) {
        self.shared.add_fault(fault);
    }

    /// The next `count` actions of `command` (e.g. `create_image`) end in an error.
    pub fn fail_next_actions(&self, command: &str, count: u32) {
        self.add_fault(FaultSpec::Action(ActionFailure::new(command, Some(count))));
    }

    /// The faults still in force, as `GET /_sim/faults` shows them (counted
    /// ones disappear once used up).
    pub fn faults_json(&self) -> Value {
        self.shared.faults_json()
    }

    pub fn clear_faults(&self) {
        self.shared.clear_faults();
    }

    /// The server's Talos API stops answering (its apid is not registered
    /// with the proxy) until the faults are cleared.
    pub fn make_talos_unreachable(&self, server: Id) {
        self.add_fault(FaultSpec::Talos(TalosFault::Unreachable {
            server: Some(ServerRef::Id(server)),
        }));
    }

    /// Every boot of the server's Talos takes `extra` longer.
    pub fn slow_talos_boot(&self, server: Id, extra: Duration) {
        self.add_fault(FaultSpec::Talos(TalosFault::SlowBoot {
            server: Some(ServerRef::Id(server)),
            delay_ms: u64::try_from(extra.as_millis()).unwrap_or(u64::MAX),
        }));
    }

    /// The next `count` ApplyConfiguration calls to the server fail with
    /// `code` and `message`.
    pub fn reject_talos_apply(&self, server: Id, code: tonic::Code, message: &str, count: u32) {
        self.add_fault(FaultSpec::Talos(TalosFault::ApplyRejected {
            server: Some(ServerRef::Id(server)),
            code: GrpcCode(code),
            message: Some(message.to_string()),
            count: Some(count),
        }));
    }

    /// The Kubernetes API server on the control plane turns unhealthy: its
    /// `/readyz` answers 500 (`[-]etcd failed: injected`) until the faults
    /// are cleared.
    pub fn make_kube_apiserver_unready(&self, server: Id) {
        self.add_fault(FaultSpec::Talos(TalosFault::ApiserverDown {
            server: Some(ServerRef::Id(server)),
        }));
    }

    /// Rescue systems' SSH comes up only `delay` after they boot.
    pub fn slow_rescue_ssh(&self, delay: Duration) {
        self.add_fault(FaultSpec::Rescue(RescueFault::SlowSsh {
            server: None,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        }));
    }

    /// The next `count` image downloads in rescue systems fail (curl exits 22).
    pub fn fail_next_downloads(&self, count: u32) {
        self.add_fault(FaultSpec::Rescue(RescueFault::DownloadFails {
            server: None,
            count: Some(count),
            message: None,
        }));
    }

    /// Servers' events from now on.
    pub fn events(&self) -> broadcast::Receiver<SimEvent> {
        self.shared.events.subscribe()
    }

    /// Makes `port` of `server` reachable through the proxy: connections to
    /// the server's private IPs on that port go to `target` on loopback.
    pub fn register_endpoint(
        &self,
        server: Id,
        port: u16,
        target: SocketAddr,
    ) -> Result<(), SimError> {
        if !socks5::is_allowed_target(target) {
            return Err(SimError::TargetNotLoopback(target));
        }
        if self.shared.world().server(server).is_err() {
            return Err(SimError::UnknownServer(server));
        }
        lock(&self.shared.endpoints).insert((server, port), target);
        Ok(())
    }

    /// Like [`SimHandle::register_endpoint`], naming the server by a private
    /// IP it has now. Returns the server's ID.
    pub fn register_private_endpoint(
        &self,
        ip: Ipv4Addr,
        port: u16,
        target: SocketAddr,
    ) -> Result<Id, SimError> {
        // Networks may overlap: an address of two servers names neither.
        let servers: Vec<Id> = self
            .shared
            .world()
            .servers
            .values()
            .filter(|s| s.private_net.iter().any(|p| p.has(ip)))
            .map(|s| s.id)
            .collect();
        let [server] = servers[..] else {
            return Err(SimError::UnknownPrivateIp(ip));
        };
        self.register_endpoint(server, port, target)?;
        Ok(server)
    }

    pub fn unregister_endpoint(&self, server: Id, port: u16) {
        lock(&self.shared.endpoints).remove(&(server, port));
    }

    /// Stops serving, waits for the tasks and saves the state.
    pub async fn shutdown(mut self) -> Result<(), SimError> {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
        if let Some(path) = &self.state_file {
            persist::save(&self.shared, path)?;
        }
        Ok(())
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}
