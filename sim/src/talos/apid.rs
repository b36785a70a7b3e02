//! One running emulated apid: a gRPC server on a loopback port with the TLS
//! of the node's mode, serving the machine API for one start of one node.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tracing::debug;

use super::auth::Caller;
use super::calls::NodeRef;
use super::pb::cosi::state_server::StateServer;
use super::pb::machine_service_server::MachineServiceServer;
use super::pki::{self, CertificateAuthority, PkiError};
use super::service::MachineApi;
use super::tls::{self, ClientCheck, TlsConnection, TlsError};
use crate::app::AppState;

/// The port apid listens on.
pub const APID_PORT: u16 = 50000;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What an apid serves with; a change means a new apid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApidSpec {
    pub node: NodeRef,
    /// The node's private addresses, which its certificate names.
    pub ips: Vec<Ipv4Addr>,
    pub mode: ApidMode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApidMode {
    Maintenance,
    Configured {
        /// Signs apid's certificate.
        issuer: CertificateAuthority,
        /// PEM of the OS CA that client certificates must chain to.
        trusted: String,
        hostname: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ApidError {
    #[error("cannot issue apid's certificate: {0}")]
    Certificate(#[from] PkiError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot listen on loopback: {0}")]
    Listen(#[from] std::io::Error),
}

pub struct Apid {
    pub spec: ApidSpec,
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
    shutdown: oneshot::Sender<()>,
}

impl Apid {
    pub async fn start(sim: AppState, spec: ApidSpec) -> Result<Self, ApidError> {
        let (config, clients) = match &spec.mode {
            ApidMode::Maintenance => (
                tls::maintenance_config(pki::maintenance_identity(&spec.ips)?)?,
                None,
            ),
            ApidMode::Configured {
                issuer,
                trusted,
                hostname,
            } => (
                tls::configured_config(pki::node_identity(issuer, &spec.ips, hostname)?)?,
                Some(Arc::new(ClientCheck::trusting(trusted)?)),
            ),
        };
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let (connections, incoming) = mpsc::channel(16);
        let accept = tokio::spawn(accept(
            listener,
            TlsAcceptor::from(Arc::new(config)),
            clients,
            connections,
        ));
        let state = MachineApi::new(sim.clone(), spec.node);
        let api = MachineApi::new(sim, spec.node);
        let (shutdown, stopped) = oneshot::channel::<()>();
        let incoming = ReceiverStream::new(incoming).map(Ok::<_, std::io::Error>);
        let server = spec.node.server;
        tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .add_service(MachineServiceServer::new(api))
                .add_service(StateServer::new(state))
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                debug!(server, "emulated apid stopped: {e}");
            }
        });
        Ok(Self {
            spec,
            addr,
            accept,
            shutdown,
        })
    }

    /// Stops accepting; open connections are told to go away.
    pub fn stop(self) {
        self.accept.abort();
        let _ = self.shutdown.send(());
    }
}

/// Accepts connections and completes their handshakes, each on its own so
/// that a slow client holds up no other.
async fn accept(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    clients: Option<Arc<ClientCheck>>,
    connections: mpsc::Sender<TlsConnection>,
) {
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                debug!("emulated apid accept: {e}");
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let clients = clients.clone();
        let connections = connections.clone();
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => return debug!("emulated apid TLS handshake: {e}"),
                Err(_) => return debug!("emulated apid TLS handshake timed out"),
            };
            let caller = match &clients {
                None => Caller::Anonymous,
                Some(check) => check.caller(stream.get_ref().1),
            };
            let _ = connections.send(TlsConnection { stream, caller }).await;
        });
    }
}
