//! A real Kubernetes control plane behind an emulated cluster: when hct-sim
//! is given the binaries ([`KubeBinaries`]: etcd, kube-apiserver,
//! kube-controller-manager, built by `scripts/ensure-peers`), each etcd
//! cluster ("ring", see `etcd`) whose Kubernetes release is theirs gets
//! a real etcd member per control plane that is a member of it, one real
//! kube-apiserver and one real kube-controller-manager on loopback,
//! started with the flags and
//! certificates Talos derives from the control planes' machine config.
//! Every control plane's port 6443 (`kube_api`) then passes its
//! connections through to that kube-apiserver while the node's own API
//! server would run, so TLS, authentication, RBAC, admission, server-side
//! apply and node CIDR allocation are the real ones'. Clusters of another
//! release, and every cluster when no binaries are given, are served by
//! the emulated store (`crate::kube`).
//!
//! - `spec`: which control planes should run, and with what;
//! - `files` and `process`: their certificates and configuration files,
//!   and the child processes; `etcd_ring`: the ring's etcd, a real member
//!   per member the emulation lists, joined and removed through etcd's
//!   own cluster API (`etcd_api`); `restore`: a recovering ring's etcd
//!   data, from the snapshot uploaded for it (with etcdutl);
//! - `start`: the order they start in and the wait for readiness;
//! - `client`: requests to the real API server as a given user;
//! - `kubelets`: the emulated kubelets (Nodes, leases, mirror pods and
//!   serving CSRs, each node with its own credentials from its TLS
//!   bootstrap, `tls_bootstrap`), kept in line with the world;
//!   `bootstrap`: Talos' bootstrap manifests;
//! - `addons`: kubelet-csr-approver and Hetzner's cloud controller manager
//!   as real processes, for the clusters that deploy them.
//!
//! [`Registry`] says where each ring's kube-apiserver and etcd listen once
//! ready ([`Endpoints`]) and which etcd members it lists: port 6443 passes
//! through to the one, Talos' EtcdSnapshot (`talos::etcd_snapshot`) reads
//! the node's own member.
//!
//! Talos' EtcdMemberList answers with the members the real etcd lists
//! (their IDs, learners and voters) and "no leader" when too few of its
//! voters run ([`Registry::etcd_listing`]), once the ring's real etcd has
//! listed them.
//!
//! Not real here: which members the emulation takes for joined (the real
//! ones follow it: `etcd_ring`), and EtcdMemberList before the ring's real
//! etcd starts; kube-scheduler (no pod is scheduled).

pub mod addons;
pub mod bootstrap;
pub mod client;
pub mod etcd_api;
pub mod etcd_front;
pub mod etcd_member;
pub mod etcd_ring;
pub mod files;
pub mod kubelets;
pub mod process;
pub mod restore;
pub mod spec;
pub mod start;
pub mod tls_bootstrap;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use self::spec::{ControlPlaneSpec, wanted};

/// The real components hct-sim runs, and the Kubernetes release they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeBinaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    pub kube_controller_manager: PathBuf,
    /// kubelet-csr-approver and Hetzner's cloud controller manager, run
    /// for the clusters that deploy them (`addons`); None: not run.
    pub csr_approver: Option<PathBuf>,
    pub hcloud_ccm: Option<PathBuf>,
    /// etcd's etcdutl, which restores a snapshot a recovering Bootstrap
    /// starts etcd from (`restore`); None: such a ring fails.
    pub etcdutl: Option<PathBuf>,
    /// `v1.37.2`: clusters configured for another release stay emulated.
    pub version: String,
    /// Where hct-sim makes its directory for their data, certificates and
    /// logs (a directory per ring in it), removed when hct-sim ends.
    pub work_dir: PathBuf,
}

impl KubeBinaries {
    /// The binaries named in `text`, `KEY=VALUE` lines as
    /// `scripts/ensure-peers` prints them (`ETCD`, `KUBE_APISERVER`,
    /// `KUBE_CONTROLLER_MANAGER`, `KUBE_CONTROL_PLANE_VERSION`; `ETCDUTL`,
    /// `CSR_APPROVER` and `HCLOUD_CCM` when there), working under the
    /// system's temporary directory; Err names a missing line.
    pub fn from_lines(text: &str) -> Result<Self, String> {
        let lines: BTreeMap<&str, &str> = text
            .lines()
            .filter_map(|l| l.trim().split_once('='))
            .collect();
        let required = |key: &str| {
            lines
                .get(key)
                .map(|v| PathBuf::from(*v))
                .ok_or_else(|| format!("no {key}= line"))
        };
        let version = required("KUBE_CONTROL_PLANE_VERSION")?;
        Ok(Self {
            etcd: required("ETCD")?,
            kube_apiserver: required("KUBE_APISERVER")?,
            kube_controller_manager: required("KUBE_CONTROLLER_MANAGER")?,
            csr_approver: lines.get("CSR_APPROVER").map(PathBuf::from),
            hcloud_ccm: lines.get("HCLOUD_CCM").map(PathBuf::from),
            etcdutl: lines.get("ETCDUTL").map(PathBuf::from),
            version: format!("v{}", version.display().to_string().trim_start_matches('v')),
            work_dir: std::env::temp_dir(),
        })
    }
}

/// hct-sim's own directory under [`KubeBinaries::work_dir`], removed with
/// it (the components are gone by then: their tasks hold hct-sim).
pub struct WorkDir(PathBuf);

impl WorkDir {
    /// A directory of its own in `parent`: a name nobody holds (one that
    /// exists, e.g. a dead process' of the same id, is passed over).
    pub fn create(parent: &std::path::Path) -> std::io::Result<Self> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = parent.join(format!("hct-sim-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where a ring's control plane is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Status {
    #[default]
    Starting,
    Ready(Endpoints),
    Failed(String),
}

/// Where a ready ring's components listen, on loopback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    /// kube-apiserver (HTTPS).
    pub api: SocketAddr,
    /// The ring's etcd front (plaintext gRPC and its JSON gateway), which
    /// passes each connection to a running voter (`etcd_ring`).
    pub etcd: SocketAddr,
}

/// What a ring's real etcd says of its members ([`Registry::etcd_listing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EtcdListing {
    /// No real etcd runs the ring (another release, no binaries, or it
    /// failed): the emulation's membership is all there is.
    Emulated,
    /// It starts and has listed nothing yet.
    Starting,
    /// As it last listed them, and the names of the members whose
    /// process runs.
    Listed {
        members: Vec<etcd_api::Member>,
        running: Vec<String>,
    },
}

/// The rings' control planes by store id (`kube_api::store::store_id`):
/// where each is, its Nodes as the real API server last listed them and
/// its etcd members as the real etcd last listed them.
#[derive(Default)]
pub struct Registry(std::sync::Mutex<BTreeMap<String, Ring>>);

#[derive(Default)]
struct Ring {
    status: Status,
    nodes: Vec<NodeView>,
    /// As the real etcd last listed them; None until it did since the
    /// ring last started.
    etcd_members: Option<Vec<etcd_api::Member>>,
    /// The members whose process hct-sim runs, by name.
    etcd_running: Vec<String>,
}

/// What `/_sim/state` shows of a Node in a real API server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NodeView {
    pub name: String,
    pub ready: String,
    #[serde(rename = "providerID")]
    pub provider_id: Option<String>,
    #[serde(rename = "podCIDR")]
    pub pod_cidr: Option<String>,
    pub taints: Vec<String>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Ring>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where `store`'s components listen, once they serve; None if they
    /// failed, do not start in time, or the ring has none.
    pub async fn endpoints(&self, store: &str) -> Option<Endpoints> {
        let deadline = tokio::time::Instant::now() + START_WAIT;
        loop {
            match self.get(store) {
                Some(Status::Ready(endpoints)) => return Some(endpoints),
                Some(Status::Starting) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                _ => return None,
            }
        }
    }

    /// A ring that starts or failed has no etcd members to show.
    pub fn set(&self, store: &str, status: Status) {
        let mut rings = self.lock();
        let ring = rings.entry(store.to_string()).or_default();
        if !matches!(status, Status::Ready(_)) {
            ring.etcd_members = None;
            ring.etcd_running.clear();
        }
        ring.status = status;
    }

    /// The ring's Nodes, unless it was removed meanwhile.
    pub fn set_nodes(&self, store: &str, nodes: Vec<NodeView>) {
        if let Some(entry) = self.lock().get_mut(store) {
            entry.nodes = nodes;
        }
    }

    /// The ring's etcd members as etcd lists them (None: it did not
    /// answer, the last list stands) and which of them run, unless the
    /// ring was removed meanwhile.
    pub fn set_etcd(
        &self,
        store: &str,
        members: Option<Vec<etcd_api::Member>>,
        running: Vec<String>,
    ) {
        if let Some(entry) = self.lock().get_mut(store) {
            if members.is_some() {
                entry.etcd_members = members;
            }
            entry.etcd_running = running;
        }
    }

    /// What the real etcd of `store` says of its members: what it last
    /// listed since the ring started, and which members' processes run
    /// (read together); nothing yet while it starts; no word where `store`
    /// has no real etcd, or it failed.
    pub fn etcd_listing(&self, store: &str) -> EtcdListing {
        let rings = self.lock();
        match rings.get(store) {
            None => EtcdListing::Emulated,
            Some(ring) if matches!(ring.status, Status::Failed(_)) => EtcdListing::Emulated,
            Some(ring) => match &ring.etcd_members {
                None => EtcdListing::Starting,
                Some(members) => EtcdListing::Listed {
                    members: members.clone(),
                    running: ring.etcd_running.clone(),
                },
            },
        }
    }

    /// Where the real etcd member `name` of `store` serves clients, once
    /// the ring lists it started; None if it does not within a while.
    pub async fn etcd_member(&self, store: &str, name: &str) -> Option<SocketAddr> {
        let deadline = tokio::time::Instant::now() + MEMBER_WAIT;
        loop {
            let listed = self.lock().get(store).and_then(|ring| {
                let member = ring
                    .etcd_members
                    .iter()
                    .flatten()
                    .find(|m| m.name == name)?;
                let url = member.client_urls.first()?;
                url.strip_prefix("http://")?.parse().ok()
            });
            if listed.is_some() || tokio::time::Instant::now() >= deadline {
                return listed;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn remove(&self, store: &str) {
        self.lock().remove(store);
    }

    pub fn get(&self, store: &str) -> Option<Status> {
        self.lock().get(store).map(|ring| ring.status.clone())
    }

    /// Each ring's status, Nodes and etcd members (as etcd lists them, and
    /// the names of those whose process runs), for `/_sim/state`
    /// (`kubernetes`).
    pub fn to_json(&self) -> serde_json::Value {
        let rings = self.lock();
        rings
            .iter()
            .map(|(store, ring)| {
                let status = match &ring.status {
                    Status::Starting => serde_json::json!({"status": "starting"}),
                    Status::Ready(_) => serde_json::json!({"status": "ready"}),
                    Status::Failed(why) => serde_json::json!({"status": "failed", "error": why}),
                };
                let mut entry = status;
                entry["nodes"] = serde_json::json!(ring.nodes);
                entry["etcd_members"] =
                    serde_json::json!(ring.etcd_members.iter().flatten().collect::<Vec<_>>());
                entry["etcd_running"] = serde_json::json!(ring.etcd_running);
                (store.clone(), entry)
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

/// How long a snapshot waits for its node's member to be listed started
/// (the ring lists its members every couple of seconds).
const MEMBER_WAIT: Duration = Duration::from_secs(30);

/// How long a connection to a control plane that is starting waits for it
/// to serve (a cold start takes some seconds on a busy machine).
const START_WAIT: Duration = Duration::from_secs(180);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_come_from_the_lines_ensure_peers_prints() {
        let text = "PEERS_CACHE=/c\nETCD=/c/etcd\nETCDUTL=/c/etcdutl\nKUBE_APISERVER=/c/api\n\
                    KUBE_CONTROLLER_MANAGER=/c/kcm\nKUBE_CONTROL_PLANE_VERSION=1.37.2\n\
                    CSR_APPROVER_SKIPPED=1\nHCLOUD_CCM=/c/ccm\n";
        let binaries = KubeBinaries::from_lines(text).unwrap();
        assert_eq!(binaries.version, "v1.37.2");
        assert_eq!(binaries.kube_apiserver, PathBuf::from("/c/api"));
        assert_eq!(binaries.csr_approver, None);
        assert_eq!(binaries.hcloud_ccm, Some(PathBuf::from("/c/ccm")));
        assert_eq!(binaries.etcdutl, Some(PathBuf::from("/c/etcdutl")));
        let missing = KubeBinaries::from_lines("ETCD=/c/etcd\nKUBE_CONTROL_PLANE_VERSION=1.37.2\n");
        assert_eq!(missing.unwrap_err(), "no KUBE_APISERVER= line");
    }

    #[test]
    fn the_real_etcds_word_is_its_last_list_since_the_ring_started() {
        let registry = Registry::default();
        let store = "c/0000000000000001";
        let member = |name: &str, is_learner: bool| etcd_api::Member {
            id: 7,
            name: name.into(),
            peer_urls: Vec::new(),
            client_urls: Vec::new(),
            is_learner,
        };
        let listed = |members: &[etcd_api::Member], running: &[&str]| EtcdListing::Listed {
            members: members.to_vec(),
            running: running.iter().map(|n| n.to_string()).collect(),
        };
        // No real etcd for the ring: the emulation's word.
        assert_eq!(registry.etcd_listing(store), EtcdListing::Emulated);
        registry.set(store, Status::Starting);
        assert_eq!(registry.etcd_listing(store), EtcdListing::Starting);
        let first = [member("cp-1-a", false), member("", true)];
        registry.set_etcd(store, Some(first.to_vec()), vec!["cp-1-a".into()]);
        assert_eq!(registry.etcd_listing(store), listed(&first, &["cp-1-a"]));
        let addr = SocketAddr::from(([127, 0, 0, 1], 9));
        registry.set(
            store,
            Status::Ready(Endpoints {
                api: addr,
                etcd: addr,
            }),
        );
        let second = [member("cp-1-a", false), member("cp-2-b", true)];
        registry.set_etcd(store, Some(second.to_vec()), vec![]);
        assert_eq!(registry.etcd_listing(store), listed(&second, &[]));
        // etcd did not answer: the last list stands, what runs is new.
        registry.set_etcd(store, None, vec!["cp-2-b".into()]);
        assert_eq!(registry.etcd_listing(store), listed(&second, &["cp-2-b"]));
        // Started again, what the last run listed is gone.
        registry.set(store, Status::Starting);
        assert_eq!(registry.etcd_listing(store), EtcdListing::Starting);
        // Failed: the emulation's word holds again.
        registry.set_etcd(store, Some(second.to_vec()), vec![]);
        registry.set(store, Status::Failed("gone".into()));
        assert_eq!(registry.etcd_listing(store), EtcdListing::Emulated);
    }
}
