//! The private-only creation flow: create the server stopped without public
//! IPs, attach it to the network at its fixed IP, power it on. A failure
//! says which of these steps it was.

use std::net::Ipv4Addr;
use std::time::Duration;

use tokio::time::Instant;

use super::client::Client;
use super::error::HcloudError;
use super::models::{Labels, PrivateNet, Server};

/// What to create: a server with no public IPs, attached to one network.
#[derive(Debug, Clone)]
pub struct PrivateServer {
    pub name: String,
    pub server_type: String,
    pub location: String,
    /// Image id or name.
    pub image: String,
    pub network: i64,
    pub ip: Ipv4Addr,
    pub placement_group: Option<i64>,
    pub labels: Labels,
    pub user_data: Option<String>,
    pub ssh_keys: Vec<i64>,
}

/// A step of the private-only creation flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateStep {
    /// Creating the server (or adopting one of ours) and waiting for it.
    Creating,
    AttachingToNetwork,
    PoweringOn,
}

impl std::fmt::Display for CreateStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Creating => "creating",
            Self::AttachingToNetwork => "attaching to the network",
            Self::PoweringOn => "powering on",
        })
    }
}

/// A step of [`Client::create_private_server_in_steps`] that failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{step}: {source}")]
pub struct StepFailed {
    pub step: CreateStep,
    #[source]
    pub source: HcloudError,
}

/// A server of hct's that is not attached at its planned IP.
fn wrong_private_ip(spec: &PrivateServer, found: Option<Ipv4Addr>) -> HcloudError {
    HcloudError::Decode {
        context: spec.name.clone(),
        reason: format!(
            "the server is attached to network {} at {}, not at the planned {}; delete the \
             server and apply again",
            spec.network,
            found.map_or_else(|| "no address".to_owned(), |ip| ip.to_string()),
            spec.ip
        ),
    }
}

impl Client {
    /// Confirms that `server` is attached to `spec`'s network at its IP
    /// (after Hetzner answered `server_already_attached`).
    async fn attached_at(&self, server: i64, spec: &PrivateServer) -> Result<(), HcloudError> {
        let found = self.server(server).await?;
        match found.as_ref().and_then(|s| s.private_ip(spec.network)) {
            Some(ip) if ip == spec.ip => Ok(()),
            other => Err(wrong_private_ip(spec, other)),
        }
    }

    /// The whole private-only flow, waiting until the server runs. `on_created`
    /// hears of the server the moment it exists, so the caller can record it
    /// before anything else can fail.
    pub async fn create_private_server(
        &self,
        spec: &PrivateServer,
        timeout: Duration,
        on_created: impl FnOnce(&Server),
    ) -> Result<Server, HcloudError> {
        self.create_private_server_in_steps(spec, timeout, on_created)
            .await
            .map_err(|failed| failed.source)
    }

    /// [`Client::create_private_server`], whose error names the step that failed.
    pub async fn create_private_server_in_steps(
        &self,
        spec: &PrivateServer,
        timeout: Duration,
        on_created: impl FnOnce(&Server),
    ) -> Result<Server, StepFailed> {
        let started = Instant::now();
        let left = || timeout.saturating_sub(started.elapsed());
        let what = |step: CreateStep| format!("{}: {step}", spec.name);
        let in_step = |step| move |source| StepFailed { step, source };

        let creating = CreateStep::Creating;
        let created = self.create_server(spec).await.map_err(in_step(creating))?;
        on_created(&created.server);
        let mut server = match created.action {
            Some(action) => {
                self.wait_for_actions(vec![action], &what(creating), left())
                    .await
                    .map_err(in_step(creating))?;
                created.server
            }
            None => self
                .wait_while_initializing(created.server, &what(creating), left())
                .await
                .map_err(in_step(creating))?,
        };

        let attaching = CreateStep::AttachingToNetwork;
        match server.private_ip(spec.network) {
            Some(ip) if ip == spec.ip => {}
            Some(other) => return Err(in_step(attaching)(wrong_private_ip(spec, Some(other)))),
            None => {
                self.attach(server.id, spec, &what(attaching), left())
                    .await
                    .map_err(in_step(attaching))?;
                server.private_net.push(PrivateNet {
                    network: spec.network,
                    ip: spec.ip.to_string(),
                    ..PrivateNet::default()
                });
            }
        }

        let powering_on = CreateStep::PoweringOn;
        if server.status != "running" {
            let action = self
                .power_on(server.id)
                .await
                .map_err(in_step(powering_on))?;
            self.wait_for_actions(vec![action], &what(powering_on), left())
                .await
                .map_err(in_step(powering_on))?;
            server.status = "running".into();
        }
        Ok(server)
    }

    /// Attaches the server at its planned IP and waits for the action.
    async fn attach(
        &self,
        server: i64,
        spec: &PrivateServer,
        what: &str,
        timeout: Duration,
    ) -> Result<(), HcloudError> {
        match self
            .attach_to_network(server, spec.network, &spec.ip.to_string())
            .await
        {
            Ok(action) => self
                .wait_for_actions(vec![action], what, timeout)
                .await
                .map(drop),
            // A retry after an answer was lost: the first attempt attached
            // it. Fine if it is at the planned IP (as Hetzner's own
            // Terraform provider takes this answer).
            Err(HcloudError::Api(error)) if error.code == "server_already_attached" => {
                self.attached_at(server, spec).await
            }
            Err(other) => Err(other),
        }
    }

    /// An adopted server may still be in its create action.
    async fn wait_while_initializing(
        &self,
        mut server: Server,
        what: &str,
        timeout: Duration,
    ) -> Result<Server, HcloudError> {
        let started = Instant::now();
        let mut wait = self.poll_interval();
        while server.status == "initializing" {
            if started.elapsed() > timeout {
                return Err(HcloudError::Timeout {
                    what: what.to_string(),
                    waited: started.elapsed(),
                });
            }
            self.sleep(wait, what).await?;
            wait = self.pace().grow(wait, Duration::from_secs(5));
            server = self
                .server(server.id)
                .await?
                .ok_or_else(|| HcloudError::Decode {
                    context: what.to_string(),
                    reason: "the server disappeared while it was being created".into(),
                })?;
        }
        Ok(server)
    }
}
