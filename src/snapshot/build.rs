//! Building a Talos snapshot, step by step: a temporary key and server, the
//! rescue system, the image written over SSH, a shutdown and a snapshot.
//! The temporaries are deleted whatever happens (see `cleanup`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::cleanup;
use super::error::SnapshotError;
use super::pipeline;
use super::spec::{ImageSpec, default_server_type};
use super::ssh::{self, BuilderKey, Route, SshError};
use crate::hcloud::{BuilderServer, Client, HcloudError};
use crate::talos::image;

/// What the builder server is created from; the rescue system ignores it.
const BUILDER_IMAGE: &str = "ubuntu-24.04";
/// One SSH attempt (TCP, handshake, login) at most.
const SSH_ATTEMPT: Duration = Duration::from_secs(20);
const SSH_FIRST_RETRY: Duration = Duration::from_millis(500);
const SSH_RETRY_CAP: Duration = Duration::from_secs(5);

/// What a build left: the snapshot (also when a later step failed, so the
/// state keeps track of it), why it failed, and a warning when the
/// temporaries could not all be deleted.
#[derive(Debug, Default)]
pub struct Outcome {
    pub image: Option<i64>,
    pub error: Option<SnapshotError>,
    /// [`SnapshotError::NotDeleted`], when it comes to that.
    pub warning: Option<SnapshotError>,
}

struct Build<'a> {
    client: &'a Client,
    spec: &'a ImageSpec,
    route: Route,
    cancel: &'a CancellationToken,
    id: String,
    deadline: Instant,
    server: Option<i64>,
    key: Option<i64>,
    image: Option<i64>,
}

/// Builds the snapshot; never leaves the temporary server or key behind
/// unless the API refuses to delete them (then the warning says so).
pub async fn build(
    client: &Client,
    spec: &ImageSpec,
    route: Route,
    cancel: &CancellationToken,
) -> Outcome {
    let mut build = Build {
        client,
        spec,
        route,
        cancel,
        id: build_id(),
        deadline: Instant::now() + spec.create_timeout,
        server: None,
        key: None,
        image: None,
    };
    info!(
        build = %build.id,
        "talos image build: building Talos {} ({}) schematic {} in {} on a {}",
        spec.version, spec.architecture, spec.schematic_id, spec.location, spec.server_type
    );
    let result = build.run().await;
    let leftovers = cleanup::delete_build(client, &build.id, build.server, build.key).await;
    let mut image = build.image;
    if result.is_err()
        && let Some(id) = image
        && let Ok(None) = client.with_cancel(CancellationToken::new()).image(id).await
    {
        image = None; // a failed create_image leaves no image
    }
    Outcome {
        image,
        error: result.err(),
        warning: (!leftovers.is_empty()).then(|| SnapshotError::NotDeleted {
            build_id: build.id.clone(),
            leftovers: leftovers.0,
        }),
    }
}

fn build_id() -> String {
    let mut bytes = [0u8; 6];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = fastrand::u64(..).to_be_bytes()[..6]
            .try_into()
            .unwrap_or_default();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Build<'_> {
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    fn failed(&self, step: &str, e: HcloudError) -> SnapshotError {
        SnapshotError::Hcloud {
            doing: format!("Talos image build: {step}"),
            source: Box::new(e),
            create_timeout: Some(self.spec.create_timeout),
        }
    }

    fn stopped(&self, step: &str) -> SnapshotError {
        SnapshotError::Stopped {
            step: step.to_string(),
        }
    }

    async fn run(&mut self) -> Result<(), SnapshotError> {
        let client = self.client;
        let spec = self.spec;
        let swept = cleanup::sweep(client).await;
        if !swept.is_empty() {
            info!(
                "talos image build: removed {} leftover(s) of earlier builds",
                swept.len()
            );
        }
        let name = format!("hct-talos-build-{}", self.id);
        let labels = cleanup::temporary_labels(&self.id, spec.create_timeout);

        let key = BuilderKey::generate(&name).map_err(SnapshotError::NoSshKey)?;
        let uploaded = client
            .create_ssh_key(&name, key.public_openssh(), &labels)
            .await
            .map_err(|e| self.failed("uploading the temporary SSH key", e))?;
        self.key = Some(uploaded.id);

        let created = client
            .create_builder_server(&BuilderServer {
                name: name.clone(),
                server_type: spec.server_type.clone(),
                location: spec.location.clone(),
                image: BUILDER_IMAGE.into(),
                labels: labels.clone(),
                ssh_keys: vec![uploaded.id],
            })
            .await
            .map_err(|e| self.failed("creating the temporary builder server", e))?;
        let server = created.server.id;
        self.server = Some(server);
        info!(
            server,
            "talos image build: created the temporary server {name}"
        );
        if let Some(action) = created.action {
            client
                .wait_for_action(action, &format!("{name}: creating"), self.left())
                .await
                .map_err(|e| self.failed("creating the temporary builder server", e))?;
        }
        let wanted = image::hetzner_architecture(&spec.architecture).unwrap_or_default();
        let actual = &created.server.server_type.architecture;
        if !actual.is_empty() && actual != wanted {
            return Err(SnapshotError::WrongArchitecture {
                server_type: spec.server_type.clone(),
                actual: actual.clone(),
                architecture: spec.architecture.clone(),
                wanted,
                suggested: default_server_type(&spec.architecture),
            });
        }

        let (_, action) = client
            .enable_rescue(server, &[uploaded.id])
            .await
            .map_err(|e| self.failed("enabling the rescue system", e))?;
        client
            .wait_for_action(action, &format!("{name}: enabling rescue"), self.left())
            .await
            .map_err(|e| self.failed("enabling the rescue system", e))?;
        let action = client
            .power_on(server)
            .await
            .map_err(|e| self.failed("powering on the builder", e))?;
        client
            .wait_for_action(action, &format!("{name}: powering on"), self.left())
            .await
            .map_err(|e| self.failed("powering on the builder", e))?;

        let ip = match created.server.public_net.ipv4.as_ref() {
            Some(v4) if !v4.ip.is_empty() => v4.ip.clone(),
            _ => client
                .server(server)
                .await
                .map_err(|e| self.failed("reading the builder's address", e))?
                .and_then(|s| s.public_net.ipv4.map(|v4| v4.ip))
                .ok_or(SnapshotError::NoPublicIpv4 { server })?,
        };
        let ip: Ipv4Addr = ip
            .parse()
            .map_err(|_| SnapshotError::BadAddress { server, ip })?;
        let target = SocketAddr::new(IpAddr::V4(ip), 22);
        check_route(ip, self.route)?;

        let mut session = self.wait_for_ssh(target, &key).await?;
        let image_url = spec.image_url();
        let command = pipeline::write_image_command(&spec.factory, &spec.schematic, &image_url);
        info!(
            server,
            "talos image build: writing {image_url} to {}",
            pipeline::DISK
        );
        let ran = tokio::select! {
            ran = tokio::time::timeout(self.left(), session.run(&command)) => ran,
            () = self.cancel.cancelled() => return Err(self.stopped("writing the image")),
        };
        session.close().await;
        let outcome = match ran {
            Err(_) => {
                return Err(SnapshotError::WriteTimedOut {
                    image_url,
                    create_timeout: spec.create_timeout,
                });
            }
            Ok(Err(e)) => {
                return Err(SnapshotError::WriteBroken {
                    image_url,
                    why: e.to_string(),
                });
            }
            Ok(Ok(outcome)) => outcome,
        };
        if outcome.status != Some(0) {
            let output = if outcome.stderr_tail.is_empty() {
                outcome.stdout_tail
            } else {
                outcome.stderr_tail
            };
            return Err(SnapshotError::WriteFailed {
                image_url,
                status: outcome.status,
                output,
            });
        }
        info!(server, "talos image build: image written; shutting down");

        self.shut_down(server, &name).await?;
        let (image, action) = client
            .create_snapshot(server, &spec.description(), &spec.labels())
            .await
            .map_err(|e| self.failed("creating the snapshot", e))?;
        self.image = Some(image.id);
        info!(server, image = image.id, "talos image build: snapshotting");
        match action {
            Some(action) => client
                .wait_for_action(action, &format!("{name}: snapshotting"), self.left())
                .await
                .map(drop),
            None => client
                .wait_for_image(image.id, &format!("{name}: snapshotting"), self.left())
                .await
                .map(drop),
        }
        .map_err(|e| self.failed("creating the snapshot", e))?;
        info!(
            image = image.id,
            "talos image build: snapshot {} is ready", image.id
        );
        Ok(())
    }

    /// Retries while the rescue system boots, until the create deadline.
    async fn wait_for_ssh(
        &self,
        target: SocketAddr,
        key: &BuilderKey,
    ) -> Result<ssh::Session, SnapshotError> {
        let started = Instant::now();
        let mut pause = self.client.pace().scaled(SSH_FIRST_RETRY);
        let mut last = None;
        for attempt in 1.. {
            let left = self.left();
            if left.is_zero() {
                break;
            }
            info!(
                "talos image build: waiting for SSH on {}, attempt {attempt}, {}",
                target.ip(),
                crate::duration::format(started.elapsed())
            );
            let connected = tokio::select! {
                connected = ssh::connect(target, self.route, key, left.min(SSH_ATTEMPT)) => connected,
                () = self.cancel.cancelled() => return Err(self.stopped("waiting for SSH")),
            };
            match connected {
                Ok(session) => {
                    info!(
                        "talos image build: logged in to the rescue system on {}",
                        target.ip()
                    );
                    return Ok(session);
                }
                Err(e) => {
                    if e == SshError::Rejected {
                        warn!("talos image build: {e}; retrying while the rescue system boots");
                    }
                    last = Some(e);
                }
            }
            let wait = pause.min(self.left());
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.cancel.cancelled() => return Err(self.stopped("waiting for SSH")),
            }
            pause = self.client.pace().grow(pause, SSH_RETRY_CAP);
        }
        Err(SnapshotError::SshTimedOut {
            ip: target.ip(),
            create_timeout: self.spec.create_timeout,
            waited: started.elapsed(),
            last: last.map(|e| e.to_string()),
        })
    }

    /// ACPI shutdown, waiting for `off`; a hard power-off if it hangs.
    async fn shut_down(&self, server: i64, name: &str) -> Result<(), SnapshotError> {
        self.client
            .shut_down(server, name, self.left())
            .await
            .map_err(|e| self.failed("shutting down the builder", e))
    }
}

/// Refuses to dial the documentation ranges directly (RFC 5737): hct-sim
/// hands them out, and they lead nowhere on the internet, so reaching one
/// needs the emulator's proxy.
fn check_route(ip: Ipv4Addr, route: Route) -> Result<(), SnapshotError> {
    let documentation = matches!(
        ip.octets(),
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _]
    );
    if documentation && route == Route::Direct {
        return Err(SnapshotError::Unroutable { ip });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_ids_are_label_values() {
        let id = build_id();
        assert_eq!(id.len(), 12);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(id, build_id());
    }

    #[test]
    fn emulator_addresses_need_the_proxy() {
        let proxy = Route::Socks5(crate::net::Proxy::new("127.0.0.1:1080".parse().unwrap()));
        assert!(check_route("203.0.113.7".parse().unwrap(), Route::Direct).is_err());
        assert!(check_route("203.0.113.7".parse().unwrap(), proxy).is_ok());
        assert!(check_route("95.217.1.2".parse().unwrap(), Route::Direct).is_ok());
    }
}
