//! The Kubernetes API server of a control plane, as far as health checks
//! go: HTTPS on port 6443 of the node's private IPs (through the proxy,
//! like apid), with a serving certificate from the cluster's Kubernetes CA,
//! answering `/livez`, `/readyz` and `/healthz` to clients whose
//! certificate chains to that CA (401 otherwise, as kube-apiserver with
//! anonymous auth off), over HTTP/1.1, one request per connection.
//!
//! On Talos kube-apiserver is a static pod that comes up once etcd runs on
//! the node; here it serves while the node's etcd member runs (the etcd
//! service ServiceList shows is Running and healthy) and goes away when
//! the node stops, reboots, resets or leaves etcd. `/readyz` is ok while
//! that holds, a quorum of the cluster's etcd members runs, and no
//! `apiserver_down` fault hits the node.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tracing::debug;

use super::auth::Caller;
use super::calls::NodeRef;
use super::cluster::{self, Clusters};
use super::config::MachineConfig;
use super::faults;
use super::lifecycle;
use super::node::NodeState;
use super::pki::{self, CertificateAuthority, PkiError};
use super::services;
use super::tls::{self, ClientCheck, TlsError};
use crate::app::AppState;
use crate::resources::servers::Server;
use crate::state::World;

/// The port kube-apiserver listens on.
pub const KUBE_API_PORT: u16 = 6443;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a request's head may take.
const MAX_HEAD: usize = 16 * 1024;

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

/// Whether the node's etcd runs, as ServiceList reports it: Running and
/// healthy, which takes membership and egress. Otherwise why not.
fn etcd_ready(
    world: &World,
    server: &Server,
    node: &NodeState,
    config: &MachineConfig,
) -> Result<(), String> {
    let etcd = services::of(world, server, node, config)
        .into_iter()
        .find(|s| s.id == "etcd")
        .ok_or_else(|| "etcd does not run on this node".to_string())?;
    if etcd.state == "Running" && etcd.healthy {
        Ok(())
    } else {
        Err(format!("etcd is {}: {}", etcd.state, etcd.message))
    }
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
    let members = Clusters::of(world).members(&config.cluster);
    let up = members
        .iter()
        .filter(|member| {
            world.servers.values().any(|peer| {
                let Some(talos) = peer.talos.as_ref() else {
                    return false;
                };
                let Some(peer_config) = talos.node.config() else {
                    return false;
                };
                peer_config.cluster == config.cluster
                    && talos.node.is_running()
                    && talos.node.disk.etcd.member.as_ref().map(|m| m.id) == Some(member.id)
                    && etcd_ready(world, peer, &talos.node, peer_config).is_ok()
            })
        })
        .count();
    if up * 2 > members.len() {
        Ok(())
    } else {
        Err(format!(
            "etcd has no quorum: {up} of {} members are up",
            members.len()
        ))
    }
}

/// One running Kubernetes API server.
pub struct KubeApi {
    pub spec: KubeApiSpec,
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl KubeApi {
    pub async fn start(sim: AppState, spec: KubeApiSpec) -> Result<Self, KubeApiError> {
        let identity = pki::kube_apiserver_identity(&spec.ca, &spec.ips, &spec.dns_names)?;
        let config = tls::kube_api_config(identity, &spec.ca.certificate)?;
        let clients = Arc::new(ClientCheck::trusting(&spec.ca.certificate)?);
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let accept = tokio::spawn(accept(
            listener,
            TlsAcceptor::from(Arc::new(config)),
            clients,
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

async fn connection(
    tcp: TcpStream,
    acceptor: TlsAcceptor,
    clients: Arc<ClientCheck>,
    sim: AppState,
    node: NodeRef,
) {
    let mut stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return debug!("emulated kube-apiserver TLS handshake: {e}"),
        Err(_) => return debug!("emulated kube-apiserver TLS handshake timed out"),
    };
    let caller = clients.caller(stream.get_ref().1);
    let head = match tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => return debug!("emulated kube-apiserver read: {e}"),
        Err(_) => return debug!("emulated kube-apiserver: no request in time"),
    };
    let reply = answer(&head, &caller, || {
        let mut world = sim.world();
        let now = world.now;
        lifecycle::settle(&mut world, now);
        readiness(&world, node)
    });
    if let Err(e) = write_reply(&mut stream, &reply).await {
        debug!("emulated kube-apiserver write: {e}");
    }
}

/// A request's head as read off the connection: complete, too long, or
/// the connection closed first (None).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    Complete(Vec<u8>),
    TooLarge,
}

async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<Option<Head>> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end + 4);
            return Ok(Some(Head::Complete(head)));
        }
        if head.len() > MAX_HEAD {
            return Ok(Some(Head::TooLarge));
        }
        let read = stream.read(&mut buffer).await?;
        if read == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&buffer[..read]);
    }
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }

    fn reason(&self) -> &'static str {
        match self.status {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            404 => "Not Found",
            405 => "Method Not Allowed",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            505 => "HTTP Version Not Supported",
            _ => "Unknown",
        }
    }
}

/// The answer to one request, asking `health` only for the checks that
/// need the world.
pub fn answer(head: &Head, caller: &Caller, health: impl FnOnce() -> Result<(), String>) -> Reply {
    let Head::Complete(bytes) = head else {
        return Reply::text(431, "431 Request Header Fields Too Large");
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Reply::text(400, "400 Bad Request");
    };
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Reply::text(400, "400 Bad Request");
    };
    if !version.starts_with("HTTP/") {
        return Reply::text(400, "400 Bad Request");
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Reply::text(505, "505 HTTP Version Not Supported");
    }
    let has_host = lines
        .filter_map(|line| line.split_once(':'))
        .any(|(name, _)| name.trim().eq_ignore_ascii_case("host"));
    if version == "HTTP/1.1" && !has_host {
        return Reply::text(400, "400 Bad Request: missing required Host header");
    }
    if !matches!(caller, Caller::Verified { .. }) {
        return unauthorized();
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let verbose = query
        .split('&')
        .any(|p| p == "verbose" || p.starts_with("verbose="));
    let check = match path {
        "/livez" => "livez",
        "/readyz" => "readyz",
        "/healthz" => "healthz",
        _ => return Reply::text(404, "404 page not found\n"),
    };
    if method != "GET" {
        return Reply::text(405, "405 method not allowed\n");
    }
    let etcd = if check == "livez" { Ok(()) } else { health() };
    match (etcd, verbose) {
        (Ok(()), false) => Reply::text(200, "ok"),
        (Ok(()), true) => {
            let etcd_line = if check == "livez" { "" } else { "[+]etcd ok\n" };
            Reply::text(
                200,
                format!("[+]ping ok\n{etcd_line}{check} check passed\n"),
            )
        }
        (Err(reason), _) => Reply::text(
            500,
            format!("[+]ping ok\n[-]etcd failed: {reason}\n{check} check failed\n"),
        ),
    }
}

/// kube-apiserver's answer to a request it cannot authenticate.
fn unauthorized() -> Reply {
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    });
    Reply {
        status: 401,
        content_type: "application/json",
        body: status.to_string(),
    }
}

async fn write_reply<S: AsyncWrite + Unpin>(stream: &mut S, reply: &Reply) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        reply.status,
        reply.reason(),
        reply.content_type,
        reply.body.len(),
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(reply.body.as_bytes()).await?;
    stream.flush().await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ids::Id;
    use crate::resources::servers::Power;
    use crate::talos::calls;
    use crate::talos::faults::{ServerRef, TalosFault};
    use crate::talos::testing::{Lab, cluster, control_plane, worker};

    const MOMENT: Duration = Duration::from_millis(10);

    fn spec_of(lab: &Lab, id: Id) -> Option<KubeApiSpec> {
        spec(&lab.world, &lab.world.servers[&id])
    }

    fn ready(lab: &Lab, id: Id) -> Result<(), String> {
        readiness(&lab.world, lab.at(id))
    }

    /// Control planes of one cluster at 10.0.128.11, .12, …; the first
    /// bootstrapped and all joined.
    fn control_planes(lab: &mut Lab, count: u8) -> Vec<Id> {
        let config = cluster().machine_config(&control_plane());
        let ids: Vec<Id> = (1..=count)
            .map(|n| {
                lab.server(
                    &format!("cp-{n}"),
                    &format!("10.0.128.{}", 10 + n),
                    "v1.12.6",
                    Some(config.clone()),
                )
            })
            .collect();
        lab.settle();
        lab.on(ids[0], |w, at, _| calls::bootstrap(w, at)).unwrap();
        for _ in 0..count {
            lab.tick(MOMENT);
        }
        ids
    }

    #[test]
    fn serves_on_control_planes_once_their_etcd_member_runs() {
        let mut lab = Lab::new();
        let sample = cluster();
        let config = sample.machine_config(&control_plane());
        let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
        let w = lab.server(
            "w-1",
            "10.0.128.20",
            "v1.12.6",
            Some(sample.machine_config(&worker())),
        );
        lab.settle();
        assert_eq!(spec_of(&lab, cp), None, "not bootstrapped");
        assert_eq!(
            ready(&lab, cp),
            Err("etcd is Preparing: waiting for bootstrap or a running member to join".into())
        );

        lab.on(cp, |w, at, _| calls::bootstrap(w, at)).unwrap();
        lab.tick(MOMENT);
        let spec = spec_of(&lab, cp).expect("serves after bootstrap");
        assert_eq!(spec.node, lab.at(cp));
        assert_eq!(
            spec.ips,
            vec![Ipv4Addr::new(10, 0, 128, 11), Ipv4Addr::new(10, 0, 128, 10)],
            "the private IP and the endpoint's"
        );
        assert!(spec.dns_names.contains(&"cp-1".to_string()));
        assert!(
            spec.dns_names
                .contains(&"kubernetes.default.svc".to_string())
        );
        assert_eq!(spec.ca, sample.kubernetes_ca);
        assert_eq!(ready(&lab, cp), Ok(()));
        assert_eq!(spec_of(&lab, w), None, "workers run no API server");
        assert_eq!(ready(&lab, w), Err("the node is no control plane".into()));
    }

    #[test]
    fn faults_take_it_down_or_hide_it() {
        let mut lab = Lab::new();
        let ids = control_planes(&mut lab, 1);
        let cp = ids[0];
        lab.world
            .config
            .talos_faults
            .push(TalosFault::ApiserverDown {
                server: Some(ServerRef::Name("cp-1".into())),
            });
        assert_eq!(ready(&lab, cp), Err("injected".into()));
        assert!(spec_of(&lab, cp).is_some(), "still listening");

        lab.world.config.talos_faults = vec![TalosFault::Unreachable {
            server: Some(ServerRef::Id(cp)),
        }];
        assert_eq!(spec_of(&lab, cp), None, "unreachable like apid");
        lab.world.config.talos_faults.clear();
        assert_eq!(ready(&lab, cp), Ok(()));
    }

    #[test]
    fn readiness_needs_a_quorum_of_etcd_members() {
        let mut lab = Lab::new();
        let ids = control_planes(&mut lab, 3);
        for id in &ids {
            assert!(lab.talos(*id).node.summary.etcd_member);
            assert_eq!(ready(&lab, *id), Ok(()));
        }
        lab.world.power(ids[2], Power::Off, lab.now).unwrap();
        lab.hetzner();
        lab.tick(Duration::ZERO);
        assert_eq!(spec_of(&lab, ids[2]), None, "down with its node");
        assert_eq!(ready(&lab, ids[0]), Ok(()), "2 of 3 is a quorum");

        lab.world.power(ids[1], Power::Off, lab.now).unwrap();
        lab.hetzner();
        lab.tick(Duration::ZERO);
        assert!(spec_of(&lab, ids[0]).is_some(), "its own etcd still runs");
        assert_eq!(
            ready(&lab, ids[0]),
            Err("etcd has no quorum: 1 of 3 members are up".into())
        );

        lab.world.power(ids[1], Power::On, lab.now).unwrap();
        lab.hetzner();
        lab.settle();
        assert_eq!(ready(&lab, ids[0]), Ok(()));
        assert_eq!(ready(&lab, ids[1]), Ok(()));
    }

    #[test]
    fn reboots_and_resets_take_it_away() {
        let mut lab = Lab::new();
        let ids = control_planes(&mut lab, 2);
        let before = lab.at(ids[1]);
        lab.on(ids[1], calls::reboot).unwrap();
        assert_eq!(spec_of(&lab, ids[1]), None, "rebooting");
        assert_eq!(
            readiness(&lab.world, before),
            Err("the node is restarting".into())
        );
        lab.settle();
        let after = spec_of(&lab, ids[1]).expect("back after the reboot");
        assert_ne!(after.node, before, "a new server for the new start");

        lab.on(ids[1], |w, at, now| calls::reset(w, at, false, true, now))
            .unwrap();
        lab.tick(Duration::ZERO);
        assert_eq!(spec_of(&lab, ids[1]), None, "wiped and rebooting");
        assert_eq!(
            ready(&lab, ids[0]),
            Err("etcd has no quorum: 1 of 2 members are up".into()),
            "the member reset without leaving still counts"
        );
        // It comes back from its user data and joins etcd as a new member.
        lab.settle();
        assert!(spec_of(&lab, ids[1]).is_some());
        assert_eq!(ready(&lab, ids[0]), Ok(()), "2 of 3 members are up");
    }

    #[test]
    fn endpoint_hosts() {
        assert_eq!(
            endpoint_host("https://10.0.128.17:6443"),
            Some("10.0.128.17")
        );
        assert_eq!(
            endpoint_host("https://api.example.com/x"),
            Some("api.example.com")
        );
        assert_eq!(endpoint_host("https://[fd00::1]:6443"), Some("fd00::1"));
        assert_eq!(endpoint_host("http://10.0.0.1"), None);
        assert_eq!(endpoint_host("https://:6443"), None);
    }

    fn head(text: &str) -> Head {
        Head::Complete(text.as_bytes().to_vec())
    }

    fn admin() -> Caller {
        Caller::Verified {
            roles: vec!["system:masters".into()],
        }
    }

    fn get(path: &str) -> Head {
        head(&format!(
            "GET {path} HTTP/1.1\r\nHost: 10.0.128.11:6443\r\nConnection: close\r\n\r\n"
        ))
    }

    #[test]
    fn answers_health_checks_like_kube_apiserver() {
        let healthy = || Ok(());
        let unhealthy = || Err("injected".to_string());
        assert_eq!(
            answer(&get("/readyz"), &admin(), healthy),
            Reply::text(200, "ok")
        );
        assert_eq!(answer(&get("/livez"), &admin(), unhealthy).status, 200);
        let failed = answer(&get("/readyz"), &admin(), unhealthy);
        assert_eq!(failed.status, 500);
        assert!(
            failed.body.contains("\n[-]etcd failed: injected\n"),
            "{failed:?}"
        );
        assert!(failed.body.ends_with("readyz check failed\n"));
        assert_eq!(answer(&get("/healthz"), &admin(), unhealthy).status, 500);
        let verbose = answer(&get("/readyz?verbose"), &admin(), healthy);
        assert_eq!(
            verbose.body,
            "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"
        );
        assert_eq!(answer(&get("/api/v1/nodes"), &admin(), healthy).status, 404);
        let post = head("POST /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(answer(&post, &admin(), healthy).status, 405);
    }

    #[test]
    fn refuses_strangers_and_malformed_requests() {
        let never = || -> Result<(), String> { panic!("no health check for this request") };
        for caller in [
            Caller::Untrusted {
                reason: "no client certificate".into(),
            },
            Caller::Anonymous,
        ] {
            let refused = answer(&get("/readyz"), &caller, never);
            assert_eq!(refused.status, 401);
            assert_eq!(refused.content_type, "application/json");
            let status: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
            assert_eq!(status["reason"], "Unauthorized");
        }
        let no_host = head("GET /readyz HTTP/1.1\r\n\r\n");
        assert_eq!(answer(&no_host, &admin(), never).status, 400);
        let old = head("GET /readyz HTTP/1.0\r\n\r\n");
        assert_eq!(answer(&old, &admin(), || Ok(())).status, 200);
        let h2 = head("GET /readyz HTTP/2.0\r\nHost: x\r\n\r\n");
        assert_eq!(answer(&h2, &admin(), never).status, 505);
        let garbage = head("hello\r\n\r\n");
        assert_eq!(answer(&garbage, &admin(), never).status, 400);
        assert_eq!(answer(&Head::TooLarge, &admin(), never).status, 431);
    }

    #[tokio::test]
    async fn reads_one_request_head() {
        let (mut client, mut server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            client
                .write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\nrest")
                .await
                .unwrap();
        });
        let read = read_head(&mut server).await.unwrap();
        assert_eq!(read, Some(head("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")));
        writer.await.unwrap();

        let (client, mut server) = tokio::io::duplex(64);
        drop(client);
        assert_eq!(read_head(&mut server).await.unwrap(), None);

        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        client.write_all(&[b'a'; MAX_HEAD + 10]).await.unwrap();
        assert_eq!(read_head(&mut server).await.unwrap(), Some(Head::TooLarge));
    }
}
