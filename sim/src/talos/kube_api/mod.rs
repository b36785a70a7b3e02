//! The Kubernetes API server of a control plane. When its etcd ring has a
//! real control plane (`kube_control_plane`), port 6443 passes each
//! connection through to that kube-apiserver while this node's would be
//! ready (`pass_through`); otherwise it is emulated here, as far as
//! `kubectl version`, health checks and the object store (`crate::kube`)
//! go: HTTPS on port 6443 of the node's private
//! IPs (through the proxy, like apid), with a serving certificate from the
//! cluster's Kubernetes CA, answering `/livez`, `/readyz`, `/healthz` and
//! `/version` to clients whose certificate chains to that CA (401
//! otherwise, as kube-apiserver with anonymous auth off), over HTTP/1.1,
//! one request per connection; on Talos v1.14 and later over TLS 1.3 only.
//!
//! On Talos kube-apiserver is a static pod that comes up once etcd runs on
//! the node; here it serves while the node's etcd member runs (the etcd
//! service is Running and healthy by the emulation's own word) and goes
//! away when the node stops, reboots, resets or leaves etcd. `/readyz` is
//! ok while that holds, a quorum of the cluster's etcd members runs, and
//! no `apiserver_down` fault hits the node.
//!
//! This file holds when a server runs and what it checks for readiness,
//! and the listener; the rest is in the file named after it:
//!
//! - `http`: reading a request head, parsing it, writing a reply;
//! - `routes`: what each path answers;
//! - `version`: the Kubernetes release and its `/version` document;
//! - `store`: what the nodes put in the cluster's Kubernetes store, and
//!   API requests answered from it (`crate::kube`).

pub mod http;
pub mod routes;
pub mod store;
pub mod version;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tracing::debug;

use self::http::{read_request, write_reply};
use self::routes::{Served, route};
use self::version::KubernetesVersion;
use super::calls::NodeRef;
use super::cluster;
use super::etcd::{self, etcd_ready};
use super::faults;
use super::lifecycle;
use super::pki::{self, CertificateAuthority, PkiError};
use super::tls::{self, ClientCheck, TlsError};
use crate::app::AppState;
use crate::catalog::Architecture;
use crate::resources::servers::Server;
use crate::state::World;

// Lives in the leaf `ports`; re-exported for the `kube_api::` paths.
pub use super::ports::KUBE_API_PORT;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The names kube-apiserver's certificate carries besides the node's:
/// the `kubernetes` service's in-cluster names.
const SERVICE_NAMES: [&str; 5] = [
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "localhost",
];

/// What a Kubernetes API server serves with; a change means a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeApiSpec {
    pub node: NodeRef,
    /// The IPs its certificate names: the node's private addresses and the
    /// control plane endpoint's, when that is an IP.
    pub ips: Vec<Ipv4Addr>,
    /// The DNS names its certificate names.
    pub dns_names: Vec<String>,
    /// The Kubernetes CA: signs the serving certificate, and clients'
    /// certificates must chain to it.
    pub ca: CertificateAuthority,
    /// The Kubernetes release it runs.
    pub kubernetes: KubernetesVersion,
    /// The node's architecture, which `/version` reports as its platform.
    pub arch: Architecture,
    /// Whether it takes TLS 1.3 only, as on Talos v1.14 and later.
    pub tls13_only: bool,
    /// The store id of the real control plane (`kube_control_plane`) its
    /// connections pass through to, if its ring has one; else it answers
    /// itself, from the emulated store.
    pub real: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum KubeApiError {
    #[error("cannot issue kube-apiserver's certificate: {0}")]
    Certificate(#[from] PkiError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot listen on loopback: {0}")]
    Listen(#[from] std::io::Error),
}

/// The Kubernetes API server the node should run now, if any: a running
/// control plane (reachable: the `unreachable` fault hides it too) whose
/// etcd member runs, and which holds the Kubernetes CA's key to sign with.
/// A member implies that the cluster was bootstrapped.
pub fn spec(world: &World, server: &Server) -> Option<KubeApiSpec> {
    let talos = server.talos.as_ref()?;
    if !talos.node.is_running() || faults::is_unreachable(&world.config.talos_faults, server) {
        return None;
    }
    let config = talos.node.config().filter(|c| c.is_control_plane())?;
    config.kubernetes_ca.key.as_ref()?;
    etcd_ready(world, server, &talos.node, config).ok()?;
    let mut ips = server.private_ips();
    if ips.is_empty() {
        return None;
    }
    let mut dns_names: Vec<String> = SERVICE_NAMES.iter().map(|n| n.to_string()).collect();
    let mut name = |name: String| {
        if !dns_names.contains(&name) {
            dns_names.push(name);
        }
    };
    name(cluster::hostname(server, Some(config)));
    if let Some(host) = endpoint_host(&config.endpoint) {
        match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) if !ips.contains(&ip) => ips.push(ip),
            Ok(_) => {}
            Err(_) => name(host.to_string()),
        }
    }
    Some(KubeApiSpec {
        node: NodeRef {
            server: server.id,
            incarnation: talos.node.run.incarnation,
        },
        ips,
        dns_names,
        ca: config.kubernetes_ca.clone(),
        kubernetes: KubernetesVersion::of(config.kubernetes_version.as_deref(), &config.installs),
        arch: server
            .server_type()
            .map_or(Architecture::X86, |t| t.architecture),
        tls13_only: lifecycle::running_version(talos)
            .as_ref()
            .unwrap_or(&config.installs)
            .at_least(1, 14),
        real: None,
    })
}

/// The host of `https://host[:port][/…]`.
fn endpoint_host(endpoint: &str) -> Option<&str> {
    let authority = endpoint.strip_prefix("https://")?.split('/').next()?;
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next();
    }
    Some(
        authority
            .rsplit_once(':')
            .filter(|(_, port)| port.parse::<u16>().is_ok())
            .map_or(authority, |(host, _)| host),
    )
    .filter(|host| !host.is_empty())
}

/// What `/readyz` checks, as of the world given: the node still runs the
/// start the server was made for, no fault takes the API server down, the
/// node's etcd runs, and more than half the cluster's etcd members (those
/// etcd lists, departed ones included) run. Err holds the reason.
pub fn readiness(world: &World, at: NodeRef) -> Result<(), String> {
    let server = world
        .servers
        .get(&at.server)
        .ok_or_else(|| "the node is gone".to_string())?;
    let talos = server
        .talos
        .as_ref()
        .filter(|t| t.node.is_running() && t.node.run.incarnation == at.incarnation)
        .ok_or_else(|| "the node is restarting".to_string())?;
    let config = talos
        .node
        .config()
        .filter(|c| c.is_control_plane())
        .ok_or_else(|| "the node is no control plane".to_string())?;
    if faults::is_apiserver_down(&world.config.talos_faults, server) {
        return Err("injected".into());
    }
    etcd_ready(world, server, &talos.node, config)?;
    let ring = talos
        .node
        .disk
        .etcd
        .member
        .as_ref()
        .ok_or_else(|| "etcd is not a member yet".to_string())?
        .ring;
    etcd::quorum(world, &config.cluster, ring)
}

/// One running Kubernetes API server.
pub struct KubeApi {
    pub spec: KubeApiSpec,
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl KubeApi {
    pub async fn start(sim: AppState, spec: KubeApiSpec) -> Result<Self, KubeApiError> {
        if let Some(store) = spec.real.clone() {
            let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
            let addr = listener.local_addr()?;
            let accept = tokio::spawn(pass_through(listener, sim, spec.node, store));
            return Ok(Self { spec, addr, accept });
        }
        let identity = pki::kube_apiserver_identity(&spec.ca, &spec.ips, &spec.dns_names)?;
        let config = tls::kube_api_config(identity, &spec.ca.certificate, spec.tls13_only)?;
        let clients = Arc::new(ClientCheck::trusting(&spec.ca.certificate)?);
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let served = Arc::new(Served {
            version: spec.kubernetes.info(spec.arch),
        });
        let accept = tokio::spawn(accept(
            listener,
            TlsAcceptor::from(Arc::new(config)),
            clients,
            served,
            sim,
            spec.node,
        ));
        Ok(Self { spec, addr, accept })
    }

    /// Stops listening and drops the open connections.
    pub fn stop(self) {
        self.accept.abort();
    }
}

/// Accepts connections and serves each on its own task; the tasks end
/// with this one.
async fn accept(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    clients: Arc<ClientCheck>,
    served: Arc<Served>,
    sim: AppState,
    node: NodeRef,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    connections.spawn(connection(
                        tcp,
                        acceptor.clone(),
                        clients.clone(),
                        served.clone(),
                        sim.clone(),
                        node,
                    ));
                }
                Err(e) => debug!("emulated kube-apiserver accept: {e}"),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Passes each connection through to the ring's real kube-apiserver while
/// the node's own would be ready (else closes it, as a node whose API
/// server is down refuses).
async fn pass_through(listener: TcpListener, sim: AppState, node: NodeRef, store: String) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((mut tcp, _)) => {
                    let (sim, store) = (sim.clone(), store.clone());
                    connections.spawn(async move {
                        let ready = {
                            let mut world = sim.world();
                            let now = world.now;
                            lifecycle::settle(&mut world, now);
                            readiness(&world, node)
                        };
                        if let Err(why) = ready {
                            return debug!("kube-apiserver of {node:?} not ready: {why}");
                        }
                        let endpoints = sim.control_planes.endpoints(&store).await;
                        let Some(addr) = endpoints.map(|e| e.api) else {
                            return debug!("the real control plane {store} does not serve");
                        };
                        match TcpStream::connect(addr).await {
                            Ok(mut upstream) => {
                                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut upstream).await;
                            }
                            Err(e) => debug!("the real control plane {store} at {addr}: {e}"),
                        }
                    });
                }
                Err(e) => debug!("kube-apiserver pass-through accept: {e}"),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn connection(
    tcp: TcpStream,
    acceptor: TlsAcceptor,
    clients: Arc<ClientCheck>,
    served: Arc<Served>,
    sim: AppState,
    node: NodeRef,
) {
    let mut stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return debug!("emulated kube-apiserver TLS handshake: {e}"),
        Err(_) => return debug!("emulated kube-apiserver TLS handshake timed out"),
    };
    let caller = clients.caller(stream.get_ref().1);
    let (head, body) = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut stream)).await
    {
        Ok(Ok(Some(read))) => read,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => return debug!("emulated kube-apiserver read: {e}"),
        Err(_) => return debug!("emulated kube-apiserver: no request in time"),
    };
    let reply = route(
        &head,
        body,
        &caller,
        &served,
        || {
            let mut world = sim.world();
            let now = world.now;
            lifecycle::settle(&mut world, now);
            readiness(&world, node)
        },
        |request| {
            let mut world = sim.world();
            let now = world.now;
            lifecycle::settle(&mut world, now);
            store::serve(&mut world, now, node, request)
        },
    );
    if let Err(e) = write_reply(&mut stream, &reply).await {
        debug!("emulated kube-apiserver write: {e}");
    }
}

#[cfg(test)]
mod tests;
