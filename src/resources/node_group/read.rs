//! What a refresh and an import read: the group's servers on Hetzner, the
//! configs its nodes run (over the Talos API), drift in labels and server
//! types, and the control plane's API load balancer.

use crate::cluster::endpoint;
use crate::cluster::record::IMPORTED;
use crate::cluster::settings::ClusterSettings;
use crate::cluster::{NodeRecord, naming, running_config};
use crate::hcloud::models::{Labels, Server};
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::provider::Context;
use crate::tf::{Diagnostic, Diagnostics};

/// A group as Hetzner has it now.
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
    /// Why some node configs could not be read back.
    pub warning: Option<Diagnostic>,
    /// The control plane's API load balancer in `load_balancer` mode;
    /// `None` when not looked at (a pool, the other mode, no network or
    /// settings in state).
    pub api_load_balancer: Option<endpoint::Seen>,
}

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

/// Refreshes a group (drift): its servers, their IPs, the configs the nodes
/// run (nodes it cannot ask keep their recorded hash; a warning names them),
/// labels and server types changed outside Terraform.
pub async fn refresh(
    ctx: &Context,
    recorded: Recorded<'_>,
    settings: Result<ClusterSettings, String>,
) -> Result<Refreshed, Diagnostic> {
    let client = ctx.hcloud()?;
    let servers = client
        .servers(&naming::group_selector(recorded.cluster, recorded.group))
        .await
        .map_err(|e| e.to_diagnostic(&format!("reading {}", recorded.servers)))?;
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
    let load_balancer = match (&settings, recorded.network) {
        (Ok(settings), Some(network)) if recorded.group == CONTROL_PLANE_GROUP => {
            settings.plan.load_balancer_ip().map(|ip| (network, ip))
        }
        _ => None,
    };
    let api_load_balancer = match load_balancer {
        Some((network, ip)) => Some(
            endpoint::look(&client, recorded.cluster, network, ip)
                .await
                .map_err(|e| e.to_diagnostic("reading the API load balancer"))?,
        ),
        None => None,
    };
    let warning = if nodes.is_empty() {
        None
    } else {
        running_configs(ctx, &mut nodes, settings).await
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
        warning,
        api_load_balancer,
    })
}

/// Puts the fingerprints of the configs the nodes run into `nodes`.
async fn running_configs(
    ctx: &Context,
    nodes: &mut [NodeRecord],
    settings: Result<ClusterSettings, String>,
) -> Option<Diagnostic> {
    let not_checked = |why: String| {
        Diagnostic::warning(
            "Node configs not checked",
            format!(
                "hct could not read back the machine config of {why}. The config hashes \
                 recorded in state are kept, so a config changed outside hct on these nodes \
                 does not show in this plan. hct reaches nodes at their private IPs: when \
                 Terraform runs outside the private network, set talos_proxy (or \
                 HCT_TALOS_PROXY)."
            ),
        )
    };
    let trust = match settings.and_then(|s| s.api_trust().map_err(|e| e.to_string())) {
        Ok(trust) => trust,
        Err(e) => return Some(not_checked(format!("any node ({e})"))),
    };
    let proxy = match ctx.talos_proxy().await {
        Ok(proxy) => proxy,
        Err(d) => return Some(not_checked(format!("any node ({})", d.summary))),
    };
    let unchecked = running_config::refresh(nodes, proxy, &trust, &ctx.cancel).await;
    if unchecked.is_empty() {
        None
    } else {
        Some(not_checked(unchecked.join("; ")))
    }
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

/// The servers of `group` for `terraform import`; `not_found` when there
/// are none.
pub async fn import(
    ctx: &Context,
    cluster: &str,
    group: &str,
    servers_named: &str,
    not_found: impl FnOnce() -> Diagnostic,
) -> Result<Imported, Diagnostics> {
    let client = ctx.hcloud()?;
    let servers = client
        .servers(&naming::group_selector(cluster, group))
        .await
        .map_err(|e| e.to_diagnostic(&format!("finding {servers_named}")))?;
    if servers.is_empty() {
        return Err(not_found().into());
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
    Ok(Imported {
        servers,
        network,
        nodes,
    })
}
