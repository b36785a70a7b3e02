//! The read of one group (the control plane, or a pool): the runbook's
//! entry for a refresh and an import. What Hetzner holds of the group now
//! (its servers and their IPs, labels and types changed outside Terraform,
//! the control plane's API load balancer) and the configs its nodes run,
//! asked over the Talos API with the cluster's CA only.

use crate::net::Proxy;

use tokio_util::sync::CancellationToken;

use super::record::{IMPORTED, NodeRecord};
use super::settings::ClusterSettings;
use super::{ClusterError, endpoint, naming, running_config};
use crate::hcloud::Client;
use crate::hcloud::models::{Labels, Server};
use crate::network_plan::CONTROL_PLANE_GROUP;

/// What state says a group should be, for [`refresh`].
pub struct Recorded<'a> {
    pub cluster: &'a str,
    pub group: &'a str,
    /// The group's servers in messages, e.g. "the pool's servers".
    pub servers: &'a str,
    pub network: Option<i64>,
    pub nodes: Vec<NodeRecord>,
    pub server_labels: &'a Labels,
    pub server_type: Option<&'a str>,
}

/// A group as Hetzner and its nodes have it now.
pub struct Refreshed {
    /// The group's servers (none: the group is gone).
    pub servers: Vec<Server>,
    /// The recorded nodes whose servers exist, with their current IPs and
    /// the fingerprints of the configs they run.
    pub nodes: Vec<NodeRecord>,
    /// The user labels of the first server whose labels differ from the
    /// wanted ones (shown as a diff, so apply restores them).
    pub drifted_labels: Option<Labels>,
    /// The type of the first server not of the wanted type (apply resizes
    /// it back).
    pub drifted_server_type: Option<String>,
    /// The nodes whose configs could not be read back, and why (their
    /// recorded hashes are kept).
    pub unchecked: Option<String>,
    /// The control plane's API load balancer in `load_balancer` mode;
    /// `None` when not looked at (a pool, the other mode, no network or
    /// settings in state).
    pub api_load_balancer: Option<endpoint::Seen>,
}

/// How the read reaches the nodes: the proxy into the private network (or
/// why it is not usable), and Terraform's stop.
pub struct Reach<'a> {
    pub proxy: Result<Option<Proxy>, String>,
    pub cancel: &'a CancellationToken,
}

/// Refreshes a group (drift): its servers, their IPs, the configs the nodes
/// run (nodes it cannot ask keep their recorded hash: `unchecked` names
/// them), labels and server types changed outside Terraform.
pub async fn refresh(
    client: &Client,
    reach: Reach<'_>,
    recorded: Recorded<'_>,
    settings: &Result<ClusterSettings, String>,
) -> Result<Refreshed, ClusterError> {
    let servers = client
        .servers(&naming::group_selector(recorded.cluster, recorded.group))
        .await
        .map_err(ClusterError::hcloud(format!(
            "reading {}",
            recorded.servers
        )))?;
    let mut nodes: Vec<NodeRecord> = recorded
        .nodes
        .into_iter()
        .filter_map(|mut node| {
            let server = servers.iter().find(|s| s.id == node.server_id)?;
            if let Some(ip) = recorded.network.and_then(|n| server.private_ip(n)) {
                node.ip = ip;
            }
            Some(node)
        })
        .collect();
    let load_balancer = match (settings, recorded.network) {
        (Ok(settings), Some(network)) if recorded.group == CONTROL_PLANE_GROUP => {
            settings.plan.load_balancer_ip().map(|ip| (network, ip))
        }
        _ => None,
    };
    let api_load_balancer = match load_balancer {
        Some((network, ip)) => Some(
            endpoint::look(client, recorded.cluster, network, ip)
                .await
                .map_err(ClusterError::hcloud("reading the API load balancer"))?,
        ),
        None => None,
    };
    let unchecked = if nodes.is_empty() {
        None
    } else {
        running_configs(&mut nodes, reach, settings).await
    };
    let drifted_labels = servers
        .iter()
        .map(|s| naming::user_labels(&s.labels))
        .find(|labels| labels != recorded.server_labels);
    let drifted_server_type = servers
        .iter()
        .map(|s| &s.server_type.name)
        .find(|name| Some(name.as_str()) != recorded.server_type)
        .cloned();
    Ok(Refreshed {
        servers,
        nodes,
        drifted_labels,
        drifted_server_type,
        unchecked,
        api_load_balancer,
    })
}

/// Puts the fingerprints of the configs the nodes run into `nodes`; the
/// nodes it could not ask, and why, when there are any.
async fn running_configs(
    nodes: &mut [NodeRecord],
    reach: Reach<'_>,
    settings: &Result<ClusterSettings, String>,
) -> Option<String> {
    let trust = match settings
        .clone()
        .and_then(|s| s.api_trust().map_err(|e| e.to_string()))
    {
        Ok(trust) => trust,
        Err(e) => return Some(format!("any node ({e})")),
    };
    let proxy = match reach.proxy {
        Ok(proxy) => proxy,
        Err(why) => return Some(format!("any node ({why})")),
    };
    let unchecked = running_config::refresh(nodes, proxy, &trust, reach.cancel).await;
    (!unchecked.is_empty()).then(|| unchecked.join("; "))
}

/// An imported group: its servers by index, and their network. Their
/// configs are unknown, so the first apply re-applies them.
pub struct Imported {
    pub servers: Vec<Server>,
    pub network: i64,
    pub nodes: Vec<NodeRecord>,
}

impl Imported {
    /// The first server: what the group's type, location and labels are
    /// read from.
    pub fn first(&self) -> &Server {
        &self.servers[0]
    }
}

/// The servers of `group` for `terraform import`; None when there are none.
pub async fn import(
    client: &Client,
    cluster: &str,
    group: &str,
    servers_named: &str,
) -> Result<Option<Imported>, ClusterError> {
    let servers = client
        .servers(&naming::group_selector(cluster, group))
        .await
        .map_err(ClusterError::hcloud(format!("finding {servers_named}")))?;
    if servers.is_empty() {
        return Ok(None);
    }
    let network = servers
        .first()
        .and_then(|s| s.private_net.first())
        .map(|n| n.network)
        .unwrap_or_default();
    let mut nodes: Vec<NodeRecord> = servers
        .iter()
        .filter_map(|s| {
            Some(NodeRecord {
                name: s.name.clone(),
                server_id: s.id,
                ip: s.private_ip(network)?,
                // Configured before (by whoever ran the cluster): never a
                // node hct may send a config without the cluster's CA.
                config_sha256: Some(IMPORTED.into()),
            })
        })
        .collect();
    nodes.sort_by_key(|n| naming::node_index(cluster, group, &n.name).unwrap_or(u32::MAX));
    Ok(Some(Imported {
        servers,
        network,
        nodes,
    }))
}
