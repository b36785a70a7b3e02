//! One rescue system's SSH server, listening on 127.0.0.1 only.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use russh::keys::{PrivateKey, PublicKey};
use russh::server::{Auth, ChannelOpenHandle, Handle, Msg, Session};
use russh::{Channel, ChannelId};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, info};

use super::command::{self, WriteRequest};
use super::{DiskImage, take_download_failure};
use crate::app::AppState;
use crate::ids::Id;
use crate::resources::servers::{BootTarget, ServerStatus};

/// The duration profile's entry for writing an image from rescue.
pub const WRITE_COMMAND: &str = "rescue_write_image";

/// What a listener serves: a server's rescue boot and the keys it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RescueSpec {
    pub server: Id,
    pub booted_at: u64,
    pub keys: Vec<String>,
}

/// A running SSH server; stops when dropped or stopped.
pub struct RescueSsh {
    pub addr: SocketAddr,
    pub spec: RescueSpec,
    stop: watch::Sender<bool>,
}

impl RescueSsh {
    pub async fn start(
        sim: AppState,
        spec: RescueSpec,
        host_key: PrivateKey,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let allowed: Vec<PublicKey> = spec
            .keys
            .iter()
            .filter_map(|k| PublicKey::from_openssh(k).ok())
            .collect();
        let config = Arc::new(russh::server::Config {
            keys: vec![host_key],
            auth_rejection_time: Duration::from_millis(20),
            auth_rejection_time_initial: Some(Duration::ZERO),
            inactivity_timeout: Some(Duration::from_secs(600)),
            ..Default::default()
        });
        let (stop, mut stopped) = watch::channel(false);
        let server = spec.server;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let handler = RescueShell {
                                sim: sim.clone(),
                                server,
                                allowed: allowed.clone(),
                                channels: BTreeMap::new(),
                            };
                            let config = config.clone();
                            let mut stopped = stopped.clone();
                            tokio::spawn(async move {
                                match russh::server::run_stream(config, stream, handler).await {
                                    Ok(session) => {
                                        tokio::select! {
                                            ended = session => if let Err(e) = ended {
                                                debug!(server, "rescue ssh session: {e}");
                                            },
                                            _ = stopped.changed() => {}
                                        }
                                    }
                                    Err(e) => debug!(server, "rescue ssh handshake: {e}"),
                                }
                            });
                        }
                        Err(e) => debug!(server, "rescue ssh accept: {e}"),
                    },
                    _ = stopped.changed() => return,
                }
            }
        });
        Ok(Self { addr, spec, stop })
    }

    pub fn stop(self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for RescueSsh {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

struct RescueShell {
    sim: AppState,
    server: Id,
    allowed: Vec<PublicKey>,
    channels: BTreeMap<ChannelId, Channel<Msg>>,
}

impl RescueShell {
    fn accepts(&self, user: &str, key: &PublicKey) -> Auth {
        if user == "root" && self.allowed.iter().any(|k| k.key_data() == key.key_data()) {
            Auth::Accept
        } else {
            Auth::reject()
        }
    }
}

impl russh::server::Handler for RescueShell {
    type Error = russh::Error;

    async fn auth_publickey_offered(
        &mut self,
        user: &str,
        key: &PublicKey,
    ) -> Result<Auth, Self::Error> {
        Ok(self.accepts(user, key))
    }

    async fn auth_publickey(&mut self, user: &str, key: &PublicKey) -> Result<Auth, Self::Error> {
        let verdict = self.accepts(user, key);
        if !matches!(verdict, Auth::Accept) {
            info!(
                server = self.server,
                user, "rescue ssh: rejected a key that enable_rescue did not give"
            );
        }
        Ok(verdict)
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.channels.insert(channel.id(), channel);
        reply.accept().await;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)?;
        let command = String::from_utf8_lossy(data).into_owned();
        let handle = session.handle();
        let sim = self.sim.clone();
        let server = self.server;
        tokio::spawn(async move {
            let (status, stderr) = run(&sim, server, &command).await;
            if !stderr.is_empty() {
                let _ = handle.extended_data(channel, 1, stderr.into_bytes()).await;
            }
            finish(&handle, channel, status).await;
        });
        Ok(())
    }
}

async fn finish(handle: &Handle, channel: ChannelId, status: u32) {
    let _ = handle.exit_status_request(channel, status).await;
    let _ = handle.eof(channel).await;
    let _ = handle.close(channel).await;
}

/// "Runs" the command: returns its exit status and standard error.
async fn run(sim: &AppState, server: Id, command: &str) -> (u32, String) {
    let request = match command::check(command) {
        Ok(request) => request,
        Err(refusal) => {
            info!(
                server,
                "rescue ssh: refused a command: {}",
                refusal.stderr.trim()
            );
            return (refusal.status, refusal.stderr);
        }
    };
    let duration = {
        let mut world = sim.world();
        let Ok(s) = world.server(server).cloned() else {
            return (255, "server gone\n".into());
        };
        if let Some(message) = take_download_failure(&mut world.config.rescue_faults, &s) {
            return (
                22,
                format!("{message}\nxz: (stdin): File format not recognized\n"),
            );
        }
        world.config.durations.for_command(WRITE_COMMAND)
    };
    tokio::time::sleep(duration).await;
    record(sim, server, &request)
}

fn record(sim: &AppState, server: Id, request: &WriteRequest) -> (u32, String) {
    let mut world = sim.world();
    let now = world.now;
    let Ok(s) = world.server_mut(server) else {
        return (255, "server gone\n".into());
    };
    if s.status != ServerStatus::Running || s.boot != Some(BootTarget::Rescue) {
        return (
            255,
            "dd: error writing '/dev/sda': Input/output error (the rescue system went away)\n"
                .into(),
        );
    }
    s.disk = Some(DiskImage {
        image_url: request.image_url.clone(),
        version: request.version.clone(),
        arch: request.arch.clone(),
        schematic: request.schematic.clone(),
        server_type: s.server_type.clone(),
        written_at: now,
    });
    info!(server, url = %request.image_url, "rescue: wrote the image to /dev/sda");
    (0, String::new())
}
