//! Servers: create, find, power, resize, delete. The private-only creation
//! flow built from these calls is in `private_server.rs`.

use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::client::{Client, Retry};
use super::error::{HcloudError, Missing};
use super::labels::LabelSelector;
use super::models::{Action, Image, Labels, Server};
use super::private_server::PrivateServer;

/// How long a server gets to stop after an ACPI shutdown before its power
/// is cut.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(120);

/// How often a snapshot whose answers were lost is asked for, and the pause
/// between (scaled by the pace).
const SNAPSHOT_ATTEMPTS: u32 = 5;
const SNAPSHOT_RETRY_WAIT: Duration = Duration::from_secs(2);

/// A server that now exists, and the action still creating it (None when an
/// existing server of ours was adopted).
#[derive(Debug, Clone)]
pub struct CreatedServer {
    pub server: Server,
    pub action: Option<Action>,
    pub adopted: bool,
}

#[derive(Deserialize)]
struct ServerEnvelope {
    server: Server,
}

#[derive(Deserialize)]
struct CreateAnswer {
    server: Server,
    action: Action,
}

#[derive(Deserialize)]
struct ActionEnvelope {
    action: Action,
}

#[derive(Deserialize)]
struct RescueAnswer {
    root_password: Option<String>,
    action: Action,
}

#[derive(Deserialize)]
struct ImageAnswer {
    image: Image,
    action: Action,
}

impl Client {
    /// The server, or None when it no longer exists.
    pub async fn server(&self, id: i64) -> Result<Option<Server>, HcloudError> {
        let found = self
            .call::<ServerEnvelope>(
                Method::GET,
                &format!("servers/{id}"),
                &[],
                None,
                Retry::Transient,
            )
            .await
            .or_missing()?;
        Ok(found.map(|envelope| envelope.server))
    }

    pub async fn servers(&self, selector: &LabelSelector) -> Result<Vec<Server>, HcloudError> {
        self.list(
            "servers",
            "servers",
            &[("label_selector", selector.to_string())],
        )
        .await
    }

    pub async fn server_by_name(&self, name: &str) -> Result<Option<Server>, HcloudError> {
        let found: Vec<Server> = self
            .list("servers", "servers", &[("name", name.to_string())])
            .await?;
        Ok(found.into_iter().next())
    }

    /// Creates the server stopped and without public IPs. A server of the
    /// same name that carries all of `spec.labels` is ours (an earlier run, or
    /// a create whose answer was lost) and is adopted instead.
    pub async fn create_server(&self, spec: &PrivateServer) -> Result<CreatedServer, HcloudError> {
        let mut body = json!({
            "name": spec.name,
            "server_type": spec.server_type,
            "location": spec.location,
            "image": spec.image,
            "start_after_create": false,
            "public_net": {"enable_ipv4": false, "enable_ipv6": false},
            "labels": spec.labels,
            "ssh_keys": spec.ssh_keys,
        });
        if let Some(group) = spec.placement_group {
            body["placement_group"] = json!(group);
        }
        if let Some(user_data) = &spec.user_data {
            body["user_data"] = json!(user_data);
        }
        self.create_or_adopt(&spec.name, &spec.labels, &body).await
    }

    /// POSTs `body`; on `uniqueness_error`, the existing server of `name` is
    /// adopted when it carries all of `labels` (ours: an earlier run, or a
    /// create whose answer was lost).
    async fn create_or_adopt(
        &self,
        name: &str,
        labels: &Labels,
        body: &serde_json::Value,
    ) -> Result<CreatedServer, HcloudError> {
        match self
            .call::<CreateAnswer>(Method::POST, "servers", &[], Some(body), Retry::Transient)
            .await
        {
            Ok(answer) => Ok(CreatedServer {
                server: answer.server,
                action: Some(answer.action),
                adopted: false,
            }),
            Err(e) if e.code() == Some("uniqueness_error") => {
                match self.server_by_name(name).await? {
                    Some(existing)
                        if labels
                            .iter()
                            .all(|(k, v)| existing.labels.get(k) == Some(v)) =>
                    {
                        info!(server = %name, id = existing.id, "adopting existing server with our labels");
                        Ok(CreatedServer {
                            server: existing,
                            action: None,
                            adopted: true,
                        })
                    }
                    _ => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn server_action(
        &self,
        id: i64,
        action: &str,
        body: serde_json::Value,
        retry: Retry,
    ) -> Result<Action, HcloudError> {
        let envelope: ActionEnvelope = self
            .call(
                Method::POST,
                &format!("servers/{id}/actions/{action}"),
                &[],
                Some(&body),
                retry,
            )
            .await?;
        Ok(envelope.action)
    }

    pub async fn attach_to_network(
        &self,
        server: i64,
        network: i64,
        ip: &str,
    ) -> Result<Action, HcloudError> {
        self.server_action(
            server,
            "attach_to_network",
            json!({"network": network, "ip": ip}),
            Retry::AlsoLockedAndSubnet,
        )
        .await
    }

    pub async fn power_on(&self, server: i64) -> Result<Action, HcloudError> {
        self.server_action(server, "poweron", json!({}), Retry::AlsoLocked)
            .await
    }

    /// Cuts power (no ACPI shutdown).
    pub async fn power_off(&self, server: i64) -> Result<Action, HcloudError> {
        self.server_action(server, "poweroff", json!({}), Retry::AlsoLocked)
            .await
    }

    /// ACPI shutdown; the server may take a while to reach `off`.
    pub async fn shutdown(&self, server: i64) -> Result<Action, HcloudError> {
        self.server_action(server, "shutdown", json!({}), Retry::AlsoLocked)
            .await
    }

    /// Shuts the server down over ACPI and waits for `off`; cuts the power
    /// if it has not stopped after [`SHUTDOWN_GRACE`] (or `timeout`, if
    /// shorter). `what` names the server in logs and errors.
    pub async fn shut_down(
        &self,
        server: i64,
        what: &str,
        timeout: Duration,
    ) -> Result<(), HcloudError> {
        let started = Instant::now();
        let action = self.shutdown(server).await?;
        self.wait_for_action(action, &format!("{what}: shutting down"), timeout)
            .await?;
        let grace = started + SHUTDOWN_GRACE.min(timeout);
        let mut pause = self.poll_interval();
        loop {
            let status = self.server(server).await?.map(|s| s.status);
            if status.as_deref().is_none_or(|s| s == "off") {
                return Ok(());
            }
            if Instant::now() >= grace {
                warn!(server, "{what}: ignored the ACPI shutdown; powering it off");
                let action = self.power_off(server).await?;
                let left = timeout.saturating_sub(started.elapsed());
                self.wait_for_action(action, &format!("{what}: powering off"), left)
                    .await?;
                return Ok(());
            }
            self.sleep(pause, &format!("{what}: waiting for it to stop"))
                .await?;
            pause = self.pace().grow(pause, Duration::from_secs(3));
        }
    }

    /// Moves a stopped server to another type of the same architecture. The
    /// disk keeps its size unless `upgrade_disk` (a bigger disk cannot go
    /// back to a smaller type).
    pub async fn change_type(
        &self,
        server: i64,
        server_type: &str,
        upgrade_disk: bool,
    ) -> Result<Action, HcloudError> {
        let body = json!({"server_type": server_type, "upgrade_disk": upgrade_disk});
        self.server_action(server, "change_type", body, Retry::AlsoLocked)
            .await
    }

    /// Boots the rescue system on next boot; returns its root password
    /// (None when SSH keys were given).
    pub async fn enable_rescue(
        &self,
        server: i64,
        ssh_keys: &[i64],
    ) -> Result<(Option<String>, Action), HcloudError> {
        let answer: RescueAnswer = self
            .call(
                Method::POST,
                &format!("servers/{server}/actions/enable_rescue"),
                &[],
                Some(&json!({"type": "linux64", "ssh_keys": ssh_keys})),
                Retry::AlsoLocked,
            )
            .await?;
        Ok((answer.root_password, answer.action))
    }

    /// Snapshots the server's disk into an image carrying `labels`. Sent
    /// once: when the answer is lost, the snapshot the request may have made
    /// is looked for (`labels` and made from `server`) and taken, with no
    /// action to wait for; only when there is none is it sent again.
    pub async fn create_snapshot(
        &self,
        server: i64,
        description: &str,
        labels: &Labels,
    ) -> Result<(Image, Option<Action>), HcloudError> {
        let body = json!({"type": "snapshot", "description": description, "labels": labels});
        let path = format!("servers/{server}/actions/create_image");
        let mut attempt = 0;
        loop {
            attempt += 1;
            let sent = self
                .call::<ImageAnswer>(Method::POST, &path, &[], Some(&body), Retry::OnlyIfNotDone)
                .await;
            match sent {
                Ok(answer) => return Ok((answer.image, Some(answer.action))),
                Err(e) if e.is_ambiguous() => {
                    if let Some(made) = self.snapshot_made_from(server, labels).await? {
                        info!(
                            server,
                            image = made.id,
                            "the snapshot was made although its answer was lost: taking it"
                        );
                        return Ok((made, None));
                    }
                    if attempt >= SNAPSHOT_ATTEMPTS {
                        return Err(e);
                    }
                    debug!(server, attempt, "no snapshot was made ({e}); asking again");
                    self.sleep(self.pace().scaled(SNAPSHOT_RETRY_WAIT), &path)
                        .await?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The snapshot with all of `labels` made from `server`, if any.
    async fn snapshot_made_from(
        &self,
        server: i64,
        labels: &Labels,
    ) -> Result<Option<Image>, HcloudError> {
        let selector = labels
            .iter()
            .fold(LabelSelector::new(), |s, (k, v)| s.eq(k, v));
        Ok(self
            .snapshots(&selector)
            .await?
            .into_iter()
            .find(|image| image.created_from.as_ref().map(|c| c.id) == Some(server)))
    }

    pub async fn set_server_labels(
        &self,
        server: i64,
        labels: &Labels,
    ) -> Result<Server, HcloudError> {
        let envelope: ServerEnvelope = self
            .call(
                Method::PUT,
                &format!("servers/{server}"),
                &[],
                Some(&json!({"labels": labels})),
                Retry::AlsoLocked,
            )
            .await?;
        Ok(envelope.server)
    }

    /// Deletes the server; None when it was already gone.
    pub async fn delete_server(&self, server: i64) -> Result<Option<Action>, HcloudError> {
        let found = self
            .call::<ActionEnvelope>(
                Method::DELETE,
                &format!("servers/{server}"),
                &[],
                None,
                Retry::AlsoLocked,
            )
            .await
            .or_missing()?;
        Ok(found.map(|envelope| envelope.action))
    }
}

/// A throwaway server with a public IPv4 (for work that needs the internet
/// and SSH from outside, such as writing an image from the rescue system),
/// created stopped.
#[derive(Debug, Clone)]
pub struct BuilderServer {
    pub name: String,
    pub server_type: String,
    pub location: String,
    /// Image id or name (the rescue system ignores it).
    pub image: String,
    pub labels: Labels,
    pub ssh_keys: Vec<i64>,
}

impl Client {
    /// Creates the builder server stopped, with a public IPv4 and no IPv6.
    /// A server of the same name carrying all of `spec.labels` (a create
    /// whose answer was lost and retried) is adopted.
    pub async fn create_builder_server(
        &self,
        spec: &BuilderServer,
    ) -> Result<CreatedServer, HcloudError> {
        let body = json!({
            "name": spec.name,
            "server_type": spec.server_type,
            "location": spec.location,
            "image": spec.image,
            "start_after_create": false,
            "public_net": {"enable_ipv4": true, "enable_ipv6": false},
            "labels": spec.labels,
            "ssh_keys": spec.ssh_keys,
        });
        self.create_or_adopt(&spec.name, &spec.labels, &body).await
    }
}
