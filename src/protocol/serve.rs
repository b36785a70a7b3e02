//! Serving the plugin the way go-plugin expects: a unix socket in a private
//! directory, one handshake line on stdout, gRPC with AutoMTLS, and an orderly
//! exit when Terraform calls Shutdown.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use base64::Engine;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{UnixListener, UnixStream};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::Connected;
use tracing::{debug, info, warn};

use super::go_plugin::{Broker, Controller, Health, Stdio};
use super::pb::health::health_server::HealthServer;
use super::pb::plugin::grpc_broker_server::GrpcBrokerServer;
use super::pb::plugin::grpc_controller_server::GrpcControllerServer;
use super::pb::plugin::grpc_stdio_server::GrpcStdioServer;
use super::pb::tfplugin6::provider_server::ProviderServer;
use super::service::ProviderService;
use super::tls::{AutoMtls, TlsError};
use crate::provider::{Provider, SOURCE_ADDRESS};

/// The cookie Terraform sets so a provider binary run by hand can tell it
/// was not started by Terraform.
pub const MAGIC_COOKIE_KEY: &str = "TF_PLUGIN_MAGIC_COOKIE";
pub const MAGIC_COOKIE_VALUE: &str =
    "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

/// go-plugin's own protocol version, and the Terraform protocol we speak.
const CORE_PROTOCOL_VERSION: u32 = 1;
pub const PLUGIN_PROTOCOL_VERSION: u32 = 6;

/// Terraform sends whole plans and states in single messages.
const MAX_MESSAGE_SIZE: usize = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    NotLaunchedByTerraform(String),
    #[error(
        "Terraform offered plugin protocol versions {0:?}; hct speaks only version 6 (Terraform 1.0 or newer)"
    )]
    UnsupportedProtocol(String),
    #[error("could not set up the plugin's socket or signal handlers: {0}")]
    Socket(#[source] io::Error),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("gRPC server failed: {0}")]
    Grpc(#[from] tonic::transport::Error),
}

pub enum Mode {
    /// Started by Terraform.
    Plugin,
    /// Started by a developer (`--debug`): no TLS, prints TF_REATTACH_PROVIDERS.
    Debug,
}

/// Checks that Terraform started us and speaks our protocol.
pub fn check_launched_by_terraform(env: impl Fn(&str) -> Option<String>) -> Result<(), ServeError> {
    if env(MAGIC_COOKIE_KEY).as_deref() != Some(MAGIC_COOKIE_VALUE) {
        return Err(ServeError::NotLaunchedByTerraform(format!(
            "This is hct, a Terraform provider. It is not meant to be run by hand: \
             Terraform starts it when a configuration uses source = \"{SOURCE_ADDRESS}\".\n\
             To try hct, see the README. To attach a debugger, run it with --debug."
        )));
    }
    if let Some(offered) = env("PLUGIN_PROTOCOL_VERSIONS") {
        let speaks_ours = offered
            .split(',')
            .any(|v| v.trim() == PLUGIN_PROTOCOL_VERSION.to_string());
        if !speaks_ours {
            return Err(ServeError::UnsupportedProtocol(offered));
        }
    }
    Ok(())
}

pub async fn serve(provider: Arc<Provider>, mode: Mode) -> Result<(), ServeError> {
    let socket_dir = private_socket_dir()?;
    let socket_path = socket_dir.path().join("plugin.sock");
    let listener = UnixListener::bind(&socket_path).map_err(ServeError::Socket)?;

    let tls = match (&mode, std::env::var("PLUGIN_CLIENT_CERT")) {
        (Mode::Plugin, Ok(client_cert)) if !client_cert.is_empty() => {
            Some(AutoMtls::new(&client_cert)?)
        }
        _ => None,
    };

    let shutdown = CancellationToken::new();
    watch_signals(&mode, shutdown.clone())?;

    let connections = accept_connections(
        listener,
        tls.as_ref().map(|t| TlsAcceptor::from(t.config.clone())),
        shutdown.clone(),
    );
    announce(&mode, &socket_path, tls.as_ref());

    let router = tonic::transport::Server::builder()
        .add_service(
            ProviderServer::new(ProviderService::new(provider))
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
        )
        .add_service(GrpcControllerServer::new(Controller {
            shutdown: shutdown.clone(),
        }))
        .add_service(GrpcBrokerServer::new(Broker {
            shutdown: shutdown.clone(),
        }))
        .add_service(GrpcStdioServer::new(Stdio {
            shutdown: shutdown.clone(),
        }))
        .add_service(HealthServer::new(Health));
    router
        .serve_with_incoming_shutdown(connections, shutdown.cancelled_owned())
        .await?;
    info!("provider stopped");
    drop(socket_dir);
    Ok(())
}

/// A 0700 directory only we can enter, so no other user can connect to the socket.
fn private_socket_dir() -> Result<tempfile::TempDir, ServeError> {
    let parent = std::env::var_os("PLUGIN_UNIX_SOCKET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix("hct-plugin-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(parent)
        .map_err(ServeError::Socket)
}

/// Terraform forwards Ctrl-C to its plugins and then calls StopProvider, so
/// the plugin itself must survive SIGINT. SIGTERM ends it. The handlers are
/// installed before the handshake is printed, so no signal can arrive while
/// the default action (exit) is still in place.
fn watch_signals(mode: &Mode, shutdown: CancellationToken) -> Result<(), ServeError> {
    let exit_on_interrupt = matches!(mode, Mode::Debug);
    let mut interrupt = signal(SignalKind::interrupt()).map_err(ServeError::Socket)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(ServeError::Socket)?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = interrupt.recv() => {
                    if exit_on_interrupt {
                        shutdown.cancel();
                        return;
                    }
                    debug!("ignoring SIGINT: Terraform will call StopProvider");
                }
                _ = terminate.recv() => {
                    shutdown.cancel();
                    return;
                }
            }
        }
    });
    Ok(())
}

/// Accepts connections, finishing each TLS handshake on its own task so a
/// slow peer cannot hold up the next one.
fn accept_connections(
    listener: UnixListener,
    tls: Option<TlsAcceptor>,
    shutdown: CancellationToken,
) -> ReceiverStream<io::Result<PluginConnection>> {
    let (sender, receiver) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = shutdown.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        warn!("accepting a connection failed: {e}");
                        continue;
                    }
                },
            };
            let sender = sender.clone();
            match &tls {
                None => {
                    let _ = sender.send(Ok(PluginConnection::Plain(stream))).await;
                }
                Some(acceptor) => {
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        match acceptor.accept(stream).await {
                            Ok(stream) => {
                                let _ = sender
                                    .send(Ok(PluginConnection::Tls(Box::new(stream))))
                                    .await;
                            }
                            Err(e) => warn!("rejected a connection: TLS handshake failed: {e}"),
                        }
                    });
                }
            }
        }
    });
    ReceiverStream::new(receiver)
}

/// Tells Terraform (or the developer) where we listen. Write errors are
/// ignored: a reader that closed our stdout must not take the server down.
fn announce(mode: &Mode, socket_path: &Path, tls: Option<&AutoMtls>) {
    use std::io::Write;
    let text = match mode {
        Mode::Plugin => {
            let certificate = tls
                .map(|t| {
                    base64::engine::general_purpose::STANDARD_NO_PAD.encode(&t.server_certificate)
                })
                .unwrap_or_default();
            // The handshake must be the first line on stdout.
            format!(
                "{CORE_PROTOCOL_VERSION}|{PLUGIN_PROTOCOL_VERSION}|unix|{}|grpc|{certificate}\n",
                socket_path.display()
            )
        }
        Mode::Debug => {
            let reattach = serde_json::json!({
                SOURCE_ADDRESS: {
                    "Protocol": "grpc",
                    "ProtocolVersion": PLUGIN_PROTOCOL_VERSION,
                    "Pid": std::process::id(),
                    "Test": true,
                    "Addr": {"Network": "unix", "String": socket_path.display().to_string()},
                }
            });
            format!(
                "hct is running in debug mode. In the shell that runs Terraform, set:\n\n    \
                 export TF_REATTACH_PROVIDERS='{reattach}'\n\nTerraform then uses this process \
                 instead of starting hct. Stop it with Ctrl-C.\n"
            )
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// A connection from Terraform, with or without TLS.
pub enum PluginConnection {
    Plain(UnixStream),
    Tls(Box<TlsStream<UnixStream>>),
}

impl Connected for PluginConnection {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for PluginConnection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PluginConnection::Plain(s) => Pin::new(s).poll_read(cx, buf),
            PluginConnection::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for PluginConnection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            PluginConnection::Plain(s) => Pin::new(s).poll_write(cx, buf),
            PluginConnection::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PluginConnection::Plain(s) => Pin::new(s).poll_flush(cx),
            PluginConnection::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PluginConnection::Plain(s) => Pin::new(s).poll_shutdown(cx),
            PluginConnection::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_run_without_terraform() {
        let err = check_launched_by_terraform(|_| None).unwrap_err();
        assert!(err.to_string().contains("not meant to be run by hand"));
    }

    #[test]
    fn requires_protocol_six_when_terraform_lists_versions() {
        let env = |versions: &'static str| {
            move |key: &str| match key {
                MAGIC_COOKIE_KEY => Some(MAGIC_COOKIE_VALUE.to_string()),
                "PLUGIN_PROTOCOL_VERSIONS" => Some(versions.to_string()),
                _ => None,
            }
        };
        assert!(check_launched_by_terraform(env("5,6")).is_ok());
        assert!(matches!(
            check_launched_by_terraform(env("5")),
            Err(ServeError::UnsupportedProtocol(_))
        ));
    }
}
