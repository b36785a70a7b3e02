//! State shared by the HTTP handlers, the SOCKS5 proxy and the library handle.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::broadcast;

use crate::clock::Timestamp;
use crate::events::SimEvent;
use crate::faults::RouteFaults;
use crate::ids::Id;
use crate::ratelimit::RateLimiter;
use crate::requests::RequestLog;
use crate::state::World;
use crate::talos::kube_control_plane::{KubeBinaries, Registry, WorkDir};

pub type AppState = Arc<Shared>;

/// Locks a mutex; a panic elsewhere while holding it leaves the data usable.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct Shared {
    world: Mutex<World>,
    pub token: String,
    pub limiter: Mutex<RateLimiter>,
    pub faults: Mutex<RouteFaults>,
    pub requests: Mutex<RequestLog>,
    /// Loopback services standing in for a server's private ports.
    pub endpoints: Mutex<BTreeMap<(Id, u16), SocketAddr>>,
    pub events: broadcast::Sender<SimEvent>,
    /// Set when the world changed since it was last saved.
    pub dirty: AtomicBool,
    /// The real Kubernetes components to run, if any, and where the
    /// running ones are (`talos::kube_control_plane`).
    pub kube_binaries: Option<KubeBinaries>,
    pub kube_work_dir: Option<WorkDir>,
    pub control_planes: Registry,
    /// This API's base URL (`http://127.0.0.1:port/v1`), once it listens:
    /// where the clusters' cloud controller managers are pointed.
    pub api_url: std::sync::OnceLock<String>,
}

impl Shared {
    pub fn new(world: World, token: String, limiter: RateLimiter, faults: RouteFaults) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            world: Mutex::new(world),
            token,
            limiter: Mutex::new(limiter),
            faults: Mutex::new(faults),
            requests: Mutex::new(RequestLog::default()),
            endpoints: Mutex::new(BTreeMap::new()),
            events,
            dirty: AtomicBool::new(false),
            kube_binaries: None,
            kube_work_dir: None,
            control_planes: Registry::default(),
            api_url: std::sync::OnceLock::new(),
        }
    }

    /// The world as of now: actions that are due have finished.
    pub fn world(&self) -> WorldGuard<'_> {
        let now = Timestamp::now();
        let mut guard = lock(&self.world);
        let finished = guard.advance(now);
        WorldGuard {
            guard,
            now,
            shared: self,
            changed: finished > 0,
        }
    }
}

/// A locked world. Events it collected are published, and the world is
/// marked for saving, when the guard is dropped.
pub struct WorldGuard<'a> {
    guard: MutexGuard<'a, World>,
    pub now: Timestamp,
    shared: &'a Shared,
    changed: bool,
}

impl Deref for WorldGuard<'_> {
    type Target = World;

    fn deref(&self) -> &World {
        &self.guard
    }
}

impl DerefMut for WorldGuard<'_> {
    fn deref_mut(&mut self) -> &mut World {
        self.changed = true;
        &mut self.guard
    }
}

impl Drop for WorldGuard<'_> {
    fn drop(&mut self) {
        for event in self.guard.drain_events() {
            if let SimEvent::ServerDeleted { server } = event {
                lock(&self.shared.endpoints).retain(|(id, _), _| *id != server);
            }
            // Nobody listening is fine.
            let _ = self.shared.events.send(event);
        }
        if self.changed {
            self.shared.dirty.store(true, Ordering::Release);
        }
    }
}

impl Shared {
    pub fn add_fault(&self, spec: crate::faults::FaultSpec) {
        match spec {
            crate::faults::FaultSpec::Route(rule) => lock(&self.faults).add(rule),
            crate::faults::FaultSpec::Action(failure) => {
                self.world().config.action_failures.push(failure);
            }
            crate::faults::FaultSpec::Talos(crate::talos::TalosFault::Reinstalled {
                server,
                with,
            }) => {
                let mut world = self.world();
                let now = world.now;
                if let Err(e) = crate::talos::reinstall::reinstall(&mut world, &server, with, now) {
                    tracing::warn!("reinstalled fault not applied: {e}");
                }
            }
            crate::faults::FaultSpec::Talos(fault) => {
                self.world().config.talos_faults.push(fault);
            }
            crate::faults::FaultSpec::Rescue(fault) => {
                self.world().config.rescue_faults.push(fault);
            }
        }
    }

    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
        let mut world = self.world();
        world.config.action_failures.clear();
        world.config.talos_faults.clear();
        world.config.rescue_faults.clear();
    }

    /// Everything, as `GET /_sim/state` shows it, with the proxy's endpoints.
    pub fn state_json(&self) -> serde_json::Value {
        let endpoints: Vec<_> = lock(&self.endpoints)
            .iter()
            .map(|((server, port), target)| {
                serde_json::json!({"server": server, "port": port, "target": target.to_string()})
            })
            .collect();
        let listening: crate::resources::load_balancers::Listening =
            lock(&self.endpoints).keys().copied().collect();
        let world = self.world();
        let mut state = world.to_admin_json(world.now);
        state["endpoints"] = serde_json::json!(endpoints);
        // With the targets' health, which the world alone cannot tell.
        state["load_balancers"] = world
            .load_balancers
            .values()
            .map(|lb| lb.to_api(&world, Some(&listening)))
            .collect();
        state["etcd"] = crate::talos::etcd::to_json(&world);
        state["kubernetes"] = self.control_planes.to_json();
        state
    }

    pub fn faults_json(&self) -> serde_json::Value {
        let routes = lock(&self.faults).rules().to_vec();
        let world = self.world();
        let actions = world.config.action_failures.clone();
        let talos = world.config.talos_faults.clone();
        let rescue = world.config.rescue_faults.clone();
        serde_json::json!({"routes": routes, "actions": actions, "talos": talos, "rescue": rescue})
    }
}
