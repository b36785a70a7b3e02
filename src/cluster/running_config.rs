//! Which config each node runs, read back over the Talos API when Terraform
//! refreshes, so a config changed outside hct (`talosctl apply-config`,
//! `talosctl edit mc`) shows up in the plan as a re-apply. At most
//! `CONCURRENT_READS` nodes are asked at once in the whole process, however
//! many groups Terraform refreshes side by side.

use crate::net::Proxy;
use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::record::{FOREIGN_CA, IN_MAINTENANCE, NodeRecord};
use crate::talos::api::{NodeAddress, TalosClient, TalosError, Trust};
use crate::talos::config::config_sha256;

/// How long a refresh waits for one node before it keeps the recorded hash:
/// short, because a plan run outside the private network (no talos_proxy)
/// waits this long once, for all nodes at the same time.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Nodes asked at the same time: enough to hide the round trips, few enough
/// that a 100-node refresh does not open a hundred mTLS connections through
/// one proxy at once (and time them out while they queue).
const CONCURRENT_READS: usize = 16;
static READ_SLOTS: Semaphore = Semaphore::const_new(CONCURRENT_READS);

/// What a node said about its config.
enum Running {
    /// The fingerprint of the config it runs.
    Config(String),
    /// No config at all: wiped back to maintenance mode.
    Nothing,
    /// Configured by another cluster's secrets.
    Foreign,
    /// It could not be asked; the reason.
    Unknown(String),
}

/// Replaces the recorded `config_sha256` of every configured node by the
/// fingerprint of the config the node runs; a node in maintenance mode or
/// answering with another CA records that (`NodeRecord::set_untrusted`),
/// which the plan shows and the apply refuses. Nodes that cannot be
/// asked keep theirs; they are returned as "name (reason)" so the caller
/// can say that they were not checked.
pub async fn refresh(
    nodes: &mut [NodeRecord],
    proxy: Option<Proxy>,
    trust: &Trust,
    cancel: &CancellationToken,
) -> Vec<String> {
    let asks = nodes.iter().map(|node| async move {
        // A node hct has not configured yet gets its config at the next apply.
        node.config_sha256.as_ref()?;
        let address = NodeAddress::new(node.ip.into(), proxy);
        let ask = async {
            // The timeout starts once the node's turn has come.
            let Ok(_slot) = READ_SLOTS.acquire().await else {
                return Running::Unknown("stopped".into());
            };
            tokio::time::timeout(READ_TIMEOUT, running_config(&address, trust))
                .await
                .unwrap_or_else(|_| {
                    Running::Unknown(format!("no answer within {}s", READ_TIMEOUT.as_secs()))
                })
        };
        let running = tokio::select! {
            running = ask => running,
            () = cancel.cancelled() => Running::Unknown("stopped".into()),
        };
        Some(running)
    });
    let answers = join_all(asks).await;
    let mut unchecked = Vec::new();
    for (node, answer) in nodes.iter_mut().zip(answers) {
        match answer {
            None => {}
            Some(Running::Config(sha256)) => {
                if node.config_sha256.as_deref() != Some(sha256.as_str()) {
                    info!(node = %node.name, "the node runs a config hct did not give it");
                }
                node.config_sha256 = Some(sha256);
            }
            Some(Running::Nothing) => {
                warn!(node = %node.name, "the node runs no config (maintenance mode)");
                node.set_untrusted(IN_MAINTENANCE);
            }
            Some(Running::Foreign) => {
                warn!(node = %node.name, "the node answers with another cluster's CA");
                node.set_untrusted(FOREIGN_CA);
            }
            Some(Running::Unknown(reason)) => {
                debug!(node = %node.name, reason, "could not read the node's config");
                unchecked.push(format!("{} ({reason})", node.name));
            }
        }
    }
    unchecked
}

async fn running_config(address: &NodeAddress, trust: &Trust) -> Running {
    let read = async {
        TalosClient::connect(address, trust)
            .await?
            .machine_config()
            .await
    };
    match read.await {
        Ok(text) => Running::Config(config_sha256(&text)),
        Err(TalosError::Maintenance { .. }) => Running::Nothing,
        Err(TalosError::WrongCa { .. }) => Running::Foreign,
        Err(error) => Running::Unknown(error.to_string()),
    }
}
