//! A client of one node's Talos API (apid, port 50000), dialed directly or
//! through the SOCKS5 proxy, with the trust of maintenance or configured mode.

use crate::net::Proxy;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio_rustls::TlsConnector;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status};

pub use super::answers::{Applied, Bootstrapped, EtcdMember, EtcdMembers, Service};
use super::error::TalosError;
use super::tls::{Trust, shared_client_config};
use crate::net::socks5;
use crate::talos::api::pb::{self, machine_service_client::MachineServiceClient};

/// The port apid listens on.
pub use crate::network_plan::TALOS_API_PORT as APID_PORT;
/// Where Talos keeps the machine config it runs.
pub const MACHINE_CONFIG_PATH: &str = "/system/state/config.yaml";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer hct decodes (a config, a kubeconfig, manifests).
pub(super) const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// How `ApplyConfiguration` takes effect. Always explicit: Talos' default
/// (REBOOT) is deprecated and surprising.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyMode {
    /// Without reboot where Talos can, with reboot otherwise.
    Auto,
    NoReboot,
    Reboot,
    /// Apply, and roll back unless confirmed within a timeout.
    Try,
    /// Store it for the next boot.
    Staged,
}

/// Where a node is and how to get there.
#[derive(Debug, Clone)]
pub struct NodeAddress {
    /// Its private IP.
    pub ip: IpAddr,
    pub port: u16,
    /// SOCKS5 proxy into the private network, when hct runs outside it.
    pub proxy: Option<Proxy>,
}

impl NodeAddress {
    pub fn new(ip: IpAddr, proxy: Option<Proxy>) -> Self {
        Self {
            ip,
            port: APID_PORT,
            proxy,
        }
    }
}

/// What a node says to a client that shows no certificate.
#[derive(Debug)]
pub enum Probe {
    /// Its maintenance service answered: it runs no config.
    Maintenance,
    /// It asks for a client certificate: it runs a config (whose CA the
    /// probe does not know).
    WantsCertificate,
    /// It did not answer.
    Gone(TalosError),
}

/// A connected client of one node.
pub struct TalosClient {
    pub(super) node: String,
    pub(super) inner: MachineServiceClient<Channel>,
    /// The connection, for the COSI state API beside the machine API.
    pub(super) channel: Channel,
    /// Sent as the `node` metadata: apid forwards the call to that node.
    target: Option<String>,
}

impl TalosClient {
    /// Dials the node and completes the TLS handshake.
    ///
    /// A node that shows an unknown certificate to the cluster's admin is
    /// either still in maintenance mode (its maintenance service keeps
    /// answering for a few seconds after a config is applied) or configured
    /// by another cluster. Only the maintenance service answers a client
    /// without a certificate, so asking it tells the two apart.
    pub async fn connect(address: &NodeAddress, trust: &Trust) -> Result<Self, TalosError> {
        Self::connect_with(address, trust, Some(CALL_TIMEOUT)).await
    }

    /// [`TalosClient::connect`] for a call whose request streams (an etcd
    /// snapshot uploaded, [`TalosClient::etcd_recover`]): its answer comes
    /// once the upload is done, which may take longer than any fixed limit
    /// per call, so the caller bounds it.
    pub async fn connect_for_upload(
        address: &NodeAddress,
        trust: &Trust,
    ) -> Result<Self, TalosError> {
        Self::connect_with(address, trust, None).await
    }

    async fn connect_with(
        address: &NodeAddress,
        trust: &Trust,
        call_timeout: Option<Duration>,
    ) -> Result<Self, TalosError> {
        let dialed = Self::dial(address, trust, call_timeout).await;
        let (Err(TalosError::WrongCa { node, .. }), Trust::Admin(_)) = (&dialed, trust) else {
            return dialed;
        };
        match Self::probe_without_certificate(address).await {
            Probe::Maintenance => Err(TalosError::Maintenance { node: node.clone() }),
            // It went down in between, e.g. to boot into its new config.
            Probe::Gone(error) => Err(error),
            // Configured: by another cluster, or by us a moment ago.
            Probe::WantsCertificate => Self::dial(address, trust, call_timeout).await,
        }
    }

    /// Asks the node, without a certificate, whether it runs a config.
    pub async fn probe_without_certificate(address: &NodeAddress) -> Probe {
        let anonymous = Trust::Maintenance {
            pinned_spki_sha256: None,
        };
        let mut client = match Self::dial(address, &anonymous, Some(CALL_TIMEOUT)).await {
            Ok(client) => client,
            // TLS 1.2: the handshake itself fails for want of a certificate.
            Err(TalosError::Unauthorized { .. }) => return Probe::WantsCertificate,
            Err(error) => return Probe::Gone(error),
        };
        // Any answer of apid's own, even a refusal (the node is rebooting
        // into its config), means the session needed no client certificate.
        // A configured node ends the session instead: with a TLS alert, or
        // (the alert lost in the race) a reset connection. A maintenance
        // service stopping exactly now looks the same; the odds are small,
        // and it refuses new connections once stopped (`Gone` above).
        match client.inner.version(client.request(())).await {
            Ok(_) => Probe::Maintenance,
            Err(status) if std::error::Error::source(&status).is_none() => Probe::Maintenance,
            Err(_) => Probe::WantsCertificate,
        }
    }

    async fn dial(
        address: &NodeAddress,
        trust: &Trust,
        call_timeout: Option<Duration>,
    ) -> Result<Self, TalosError> {
        let node = address.ip.to_string();
        let tls = TlsConnector::from(shared_client_config(trust)?);
        let server_name = rustls::pki_types::ServerName::IpAddress(address.ip.into());
        let target = SocketAddr::new(address.ip, address.port);
        let proxy = address.proxy;
        let connector = tower::service_fn(move |_| {
            let tls = tls.clone();
            let server_name = server_name.clone();
            async move {
                let tcp = match proxy {
                    Some(proxy) => socks5::connect(proxy, target).await?,
                    None => tokio::net::TcpStream::connect(target).await?,
                };
                let stream = tls.connect(server_name, tcp).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        });
        // The URI only names the authority; the connector does the dialing.
        let endpoint = Endpoint::from_shared(format!("http://{target}"))
            .map_err(|e| TalosError::Credentials(e.to_string()))?
            .connect_timeout(CONNECT_TIMEOUT);
        let endpoint = match call_timeout {
            Some(limit) => endpoint.timeout(limit),
            None => endpoint,
        };
        let channel = endpoint
            .connect_with_connector(connector)
            .await
            .map_err(|e| classify_dial_error(&node, &e))?;
        Ok(Self {
            node,
            inner: MachineServiceClient::new(channel.clone()).max_decoding_message_size(MAX_ANSWER),
            channel,
            target: None,
        })
    }

    /// Routes further calls to `node` through this endpoint (apid proxying).
    pub fn target(mut self, node: IpAddr) -> Self {
        self.target = Some(node.to_string());
        self
    }

    pub(super) fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if let Some(node) = self
            .target
            .as_deref()
            .and_then(|n| MetadataValue::try_from(n).ok())
        {
            request.metadata_mut().insert("node", node);
        }
        request
    }

    pub(super) fn rejected(&self, call: &'static str, status: Status) -> TalosError {
        classify_status(&self.node, call, status)
    }

    pub async fn version(&mut self) -> Result<pb::VersionInfo, TalosError> {
        let response = self
            .inner
            .version(self.request(()))
            .await
            .map_err(|s| self.rejected("Version", s))?
            .into_inner();
        response
            .messages
            .into_iter()
            .next()
            .and_then(|m| m.version)
            .ok_or_else(|| self.protocol("Version", "no version in the answer"))
    }

    pub async fn apply_configuration(
        &mut self,
        config: &[u8],
        mode: ApplyMode,
    ) -> Result<Applied, TalosError> {
        use pb::apply_configuration_request::Mode;
        let wire_mode = match mode {
            ApplyMode::Auto => Mode::Auto,
            ApplyMode::NoReboot => Mode::NoReboot,
            ApplyMode::Reboot => Mode::Reboot,
            ApplyMode::Try => Mode::Try,
            ApplyMode::Staged => Mode::Staged,
        };
        let request = pb::ApplyConfigurationRequest {
            data: config.to_vec(),
            mode: wire_mode as i32,
            dry_run: false,
            try_mode_timeout: (mode == ApplyMode::Try).then_some(prost_types::Duration {
                seconds: 60,
                nanos: 0,
            }),
        };
        let response = self
            .inner
            .apply_configuration(self.request(request))
            .await
            .map_err(|s| self.rejected("ApplyConfiguration", s))?
            .into_inner();
        let result = response
            .messages
            .into_iter()
            .next()
            .ok_or_else(|| self.protocol("ApplyConfiguration", "empty answer"))?;
        metadata_error(&self.node, "ApplyConfiguration", result.metadata.as_ref())?;
        Ok(Applied {
            mode: Mode::try_from(result.mode)
                .map(|m| m.as_str_name().to_string())
                .unwrap_or_default(),
            details: result.mode_details,
            warnings: result.warnings,
        })
    }

    /// The admin kubeconfig: Talos streams a tar.gz holding one file.
    pub async fn kubeconfig(&mut self) -> Result<Vec<u8>, TalosError> {
        let stream = self
            .inner
            .kubeconfig(self.request(()))
            .await
            .map_err(|s| self.rejected("Kubeconfig", s))?
            .into_inner();
        let archive = self.data_stream("Kubeconfig", stream).collect().await?;
        let mut entries = tar::Archive::new(flate2::read::GzDecoder::new(archive.as_slice()));
        let mut files = entries
            .entries()
            .map_err(|e| self.protocol("Kubeconfig", &format!("not a tar.gz: {e}")))?;
        let mut file = files
            .next()
            .ok_or_else(|| self.protocol("Kubeconfig", "empty archive"))?
            .map_err(|e| self.protocol("Kubeconfig", &e.to_string()))?;
        let mut kubeconfig = Vec::new();
        file.read_to_end(&mut kubeconfig)
            .map_err(|e| self.protocol("Kubeconfig", &e.to_string()))?;
        Ok(kubeconfig)
    }

    /// The machine config the node runs, as Talos keeps it on its STATE
    /// partition.
    pub async fn machine_config(&mut self) -> Result<String, TalosError> {
        let bytes = self.read_file(MACHINE_CONFIG_PATH).await?;
        String::from_utf8(bytes).map_err(|_| self.protocol("Read", "the config is not UTF-8"))
    }

    pub async fn read_file(&mut self, path: &str) -> Result<Vec<u8>, TalosError> {
        let request = pb::ReadRequest {
            path: path.to_string(),
        };
        let stream = self
            .inner
            .read(self.request(request))
            .await
            .map_err(|s| self.rejected("Read", s))?
            .into_inner();
        self.data_stream("Read", stream).collect().await
    }

    pub async fn services(&mut self) -> Result<Vec<Service>, TalosError> {
        let response = self
            .inner
            .service_list(self.request(()))
            .await
            .map_err(|s| self.rejected("ServiceList", s))?
            .into_inner();
        Ok(response
            .messages
            .into_iter()
            .flat_map(|m| m.services)
            .map(|s| Service {
                healthy: s.health.as_ref().is_some_and(|h| h.healthy),
                message: s.health.map(|h| h.last_message).unwrap_or_default(),
                id: s.id,
                state: s.state,
            })
            .collect())
    }

    /// Wipes the node back to maintenance mode; `graceful` leaves etcd first.
    pub async fn reset(&mut self, graceful: bool) -> Result<(), TalosError> {
        let request = pb::ResetRequest {
            graceful,
            reboot: true,
            mode: pb::reset_request::WipeMode::All as i32,
        };
        self.inner
            .reset(self.request(request))
            .await
            .map_err(|s| self.rejected("Reset", s))?;
        Ok(())
    }

    pub async fn reboot(&mut self) -> Result<(), TalosError> {
        self.inner
            .reboot(self.request(pb::RebootRequest { mode: 0 }))
            .await
            .map_err(|s| self.rejected("Reboot", s))?;
        Ok(())
    }

    /// Installs `image` (an installer reference) and reboots into it.
    pub async fn upgrade(&mut self, image: &str) -> Result<(), TalosError> {
        let request = pb::UpgradeRequest {
            image: image.to_string(),
            preserve: true,
            stage: false,
            force: false,
        };
        self.inner
            .upgrade(self.request(request))
            .await
            .map_err(|s| self.rejected("Upgrade", s))?;
        Ok(())
    }

    pub(super) fn protocol(&self, call: &'static str, reason: &str) -> TalosError {
        TalosError::Protocol {
            node: self.node.clone(),
            call,
            reason: reason.to_string(),
        }
    }
}

/// apid reports a proxied node's failure in the answer's metadata.
pub(super) fn metadata_error(
    node: &str,
    call: &'static str,
    metadata: Option<&pb::Metadata>,
) -> Result<(), TalosError> {
    match metadata {
        Some(m) if !m.error.is_empty() => Err(TalosError::Rejected {
            node: node.to_string(),
            call,
            code: "proxied".into(),
            message: m.error.clone(),
        }),
        _ => Ok(()),
    }
}

pub(super) fn classify_status(node: &str, call: &'static str, status: Status) -> TalosError {
    let node = node.to_string();
    let message = status.message().to_string();
    match status.code() {
        // In maintenance mode apid offers only a few calls.
        Code::Unimplemented if message.contains("maintenance") => TalosError::Maintenance { node },
        Code::Unavailable | Code::DeadlineExceeded => TalosError::NotReady { node, message },
        Code::Unauthenticated | Code::PermissionDenied => TalosError::Unauthorized {
            node,
            reason: message,
        },
        code => TalosError::Rejected {
            node,
            call,
            code: format!("{code:?}"),
            message,
        },
    }
}

/// Connection failures: the proxy or node unreachable, or a TLS failure
/// (most often a certificate from another cluster's CA).
fn classify_dial_error(node: &str, error: &tonic::transport::Error) -> TalosError {
    let mut reason = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        reason = cause.to_string();
        source = cause.source();
    }
    let node = node.to_string();
    let tls_problem = [
        "UnknownIssuer",
        "BadSignature",
        "NotValidForName",
        "invalid peer certificate",
    ];
    if tls_problem.iter().any(|p| reason.contains(p)) {
        TalosError::WrongCa { node, reason }
    } else if demands_client_certificate(&reason) {
        TalosError::Unauthorized { node, reason }
    } else {
        TalosError::Unreachable { node, reason }
    }
}

/// Whether an error's text holds a TLS alert a node sends when it rejects
/// (or misses) the client's certificate.
fn demands_client_certificate(text: &str) -> bool {
    [
        "CertificateRequired",
        "certificate required",
        "BadCertificate",
        "UnknownCA",
        "CertificateUnknown",
        "AccessDenied",
    ]
    .iter()
    .any(|alert| text.contains(alert))
}
