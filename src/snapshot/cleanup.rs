//! The build's temporary server and SSH key: how they are labelled, how
//! they are deleted after every build (success, failure, Ctrl-C), and how
//! leftovers of builds that died (the provider killed, the API gone) are
//! swept by the next build.
//!
//! Labels: `hct-temporary=talos-image-build`, `hct-build=<build id>` and
//! `hct-expires=<unix seconds>`, the moment the build's create timeout (plus
//! a margin) runs out. A sweep deletes only expired leftovers, so builds
//! running at the same time (amd64 and arm64 in one apply, or two CI jobs)
//! never delete each other's servers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::hcloud::models::Labels;
use crate::hcloud::{Client, HcloudError, LabelSelector};

pub const TEMPORARY_LABEL: &str = "hct-temporary";
pub const TEMPORARY_VALUE: &str = "talos-image-build";
pub const BUILD_LABEL: &str = "hct-build";
pub const EXPIRES_LABEL: &str = "hct-expires";
/// Time for cleanup after the create timeout, before others may sweep.
const EXPIRY_MARGIN: Duration = Duration::from_secs(10 * 60);
/// How long deleting the temporaries may take, Ctrl-C or not.
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(3 * 60);

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// The labels of a build's temporary server and key.
pub fn temporary_labels(build_id: &str, create_timeout: Duration) -> Labels {
    let expires = unix_now() + create_timeout.as_secs() + EXPIRY_MARGIN.as_secs();
    Labels::from([
        (TEMPORARY_LABEL.to_string(), TEMPORARY_VALUE.to_string()),
        (BUILD_LABEL.to_string(), build_id.to_string()),
        (EXPIRES_LABEL.to_string(), expires.to_string()),
    ])
}

fn build_selector(build_id: &str) -> LabelSelector {
    LabelSelector::new()
        .eq(TEMPORARY_LABEL, TEMPORARY_VALUE)
        .eq(BUILD_LABEL, build_id)
}

/// Whether a leftover's time is up (an unreadable expiry counts as expired:
/// nothing of ours writes one).
pub fn expired(labels: &Labels, now: u64) -> bool {
    labels
        .get(EXPIRES_LABEL)
        .and_then(|v| v.parse::<u64>().ok())
        .is_none_or(|expires| expires <= now)
}

/// A client that keeps going after Ctrl-C: cleanup must finish.
fn uncancellable(client: &Client) -> Client {
    client.with_cancel(CancellationToken::new())
}

/// What cleanup could not delete.
#[derive(Debug, Default)]
pub struct Leftovers(pub Vec<String>);

impl Leftovers {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Deletes every server and key of the build: those recorded, and any the
/// API created although its answer was lost (found by the build label).
pub async fn delete_build(
    client: &Client,
    build_id: &str,
    server: Option<i64>,
    key: Option<i64>,
) -> Leftovers {
    let client = uncancellable(client);
    let work = async {
        let mut leftovers = Leftovers::default();
        let selector = build_selector(build_id);
        let mut servers: Vec<i64> = server.into_iter().collect();
        match client.servers(&selector).await {
            Ok(found) => servers.extend(found.into_iter().map(|s| s.id)),
            Err(e) => leftovers
                .0
                .push(format!("listing the build's servers: {e}")),
        }
        servers.sort_unstable();
        servers.dedup();
        let mut keys: Vec<i64> = key.into_iter().collect();
        match client.ssh_keys(&selector).await {
            Ok(found) => keys.extend(found.into_iter().map(|k| k.id)),
            Err(e) => leftovers
                .0
                .push(format!("listing the build's SSH keys: {e}")),
        }
        keys.sort_unstable();
        keys.dedup();
        for id in servers {
            if let Err(e) = delete_server(&client, id).await {
                leftovers.0.push(format!("server {id}: {e}"));
            }
        }
        for id in keys {
            if let Err(e) = client.delete_ssh_key(id).await {
                leftovers.0.push(format!("SSH key {id}: {e}"));
            }
        }
        leftovers
    };
    tokio::time::timeout(CLEANUP_TIMEOUT, work)
        .await
        .unwrap_or_else(|_| {
            Leftovers(vec![format!(
                "deleting the temporary server and key of build {build_id} took longer than {}",
                crate::duration::format(CLEANUP_TIMEOUT)
            )])
        })
}

async fn delete_server(client: &Client, id: i64) -> Result<(), HcloudError> {
    if let Some(action) = client.delete_server(id).await? {
        client
            .wait_for_action(
                action,
                &format!("deleting temporary server {id}"),
                CLEANUP_TIMEOUT,
            )
            .await?;
    }
    info!(
        server = id,
        "talos image build: deleted the temporary server"
    );
    Ok(())
}

/// Deletes expired temporaries of earlier builds. Failures only warn: the
/// next sweep tries again.
pub async fn sweep(client: &Client) -> Vec<String> {
    let selector = LabelSelector::new().eq(TEMPORARY_LABEL, TEMPORARY_VALUE);
    let now = unix_now();
    let mut swept = Vec::new();
    match client.servers(&selector).await {
        Ok(servers) => {
            for server in servers.into_iter().filter(|s| expired(&s.labels, now)) {
                match delete_server(client, server.id).await {
                    Ok(()) => swept.push(format!("server {} ({})", server.id, server.name)),
                    Err(e) => warn!(
                        server = server.id,
                        "talos image build: sweeping a leftover server failed: {e}"
                    ),
                }
            }
        }
        Err(e) => warn!("talos image build: listing leftover servers failed: {e}"),
    }
    match client.ssh_keys(&selector).await {
        Ok(keys) => {
            for key in keys.into_iter().filter(|k| expired(&k.labels, now)) {
                match client.delete_ssh_key(key.id).await {
                    Ok(()) => swept.push(format!("SSH key {} ({})", key.id, key.name)),
                    Err(e) => warn!(
                        key = key.id,
                        "talos image build: sweeping a leftover SSH key failed: {e}"
                    ),
                }
            }
        }
        Err(e) => warn!("talos image build: listing leftover SSH keys failed: {e}"),
    }
    if !swept.is_empty() {
        info!(
            "talos image build: swept leftovers of earlier builds: {}",
            swept.join(", ")
        );
    }
    swept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_mark_the_build_and_expire_after_the_timeout() {
        let labels = temporary_labels("abc123", Duration::from_secs(600));
        assert_eq!(labels[TEMPORARY_LABEL], TEMPORARY_VALUE);
        assert_eq!(labels[BUILD_LABEL], "abc123");
        let now = unix_now();
        assert!(!expired(&labels, now));
        assert!(!expired(&labels, now + 600 + 599));
        assert!(expired(&labels, now + 600 + 600 + 1));
        assert!(expired(&Labels::new(), now));
    }
}
