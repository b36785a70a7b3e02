//! The steps of a node group's lifecycle: plan its nodes, preflight,
//! converge and bring up, remove, refresh (drift), import.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cluster::budget::Budget;
use crate::cluster::endpoint::{self, Endpoint};
use crate::cluster::preflight::{self, Paths, Preflight};
use crate::cluster::settings::{ClusterSettings, NodeTraits, config_sha256};
use crate::cluster::wait::Deadline;
use crate::cluster::{ClusterError, Group, GroupSpec, NodeRecord, NodeSlot, Recorder};
use crate::cluster::{bring_up, naming, running_config};
use crate::hcloud::Client;
use crate::hcloud::models::{Labels, Server};
use crate::network_plan::NetworkPlan;
use crate::provider::Context;
use crate::resources::values::string_map;
use crate::talos::Role;
use crate::talos::api::Trust;
use crate::talos::release::TalosVersion;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

/// A group's spec from the object that holds its `server_type`, `location`
/// (at `location_path`) and `server_labels`.
pub fn group_spec(
    group: &str,
    role: Role,
    servers: &Value,
    location_path: AttrPath,
    traits: NodeTraits,
) -> GroupSpec {
    let (location, _) = preflight::location(
        servers.get("location").as_str().unwrap_or_default(),
        location_path,
    );
    GroupSpec {
        group: group.to_string(),
        role,
        server_type: servers
            .get("server_type")
            .as_str()
            .unwrap_or_default()
            .to_string(),
        location,
        server_labels: string_map(servers.get("server_labels")),
        traits,
        budget: Budget::ONE,
    }
}

/// What a group is checked against before servers are added or resized.
pub struct Target<'a> {
    pub network_id: i64,
    pub plan: &'a NetworkPlan,
    /// None while not known yet (an image built in the same apply).
    pub image_id: Option<&'a str>,
    pub talos_version: &'a TalosVersion,
}

impl<'a> From<&'a ClusterSettings> for Target<'a> {
    fn from(settings: &'a ClusterSettings) -> Self {
        Target {
            network_id: settings.network_id,
            plan: &settings.plan,
            image_id: Some(&settings.image_id),
            talos_version: &settings.talos_version,
        }
    }
}

/// Preflight of `new_servers` more servers (or a new server type) of `spec`.
pub async fn preflight(
    client: &Client,
    target: &Target<'_>,
    spec: &GroupSpec,
    new_servers: usize,
    paths: &Paths,
) -> Diagnostics {
    Preflight {
        network_id: target.network_id,
        plan: target.plan,
        image_id: target.image_id,
        talos_version: target.talos_version,
        server_type: &spec.server_type,
        location: &spec.location,
        new_servers,
        load_balancer_type: (spec.role == Role::ControlPlane
            && target.plan.load_balancer_ip().is_some())
        .then_some(endpoint::LOAD_BALANCER_TYPE),
        paths: paths.clone(),
    }
    .run(client)
    .await
}

/// The planned node list, and how many of its nodes need a new server.
/// With `configs` (everything known), each node's config hash is planned;
/// a config that cannot be made is an error at `patches`.
pub fn plan_nodes(
    slots: &[NodeSlot],
    prior: &[NodeRecord],
    configs: Option<(&ClusterSettings, &GroupSpec)>,
    patches: &AttrPath,
    diagnostics: &mut Diagnostics,
) -> (Value, usize) {
    let mut new_servers = 0;
    let nodes = slots
        .iter()
        .map(|slot| {
            let sha = match configs {
                Some((settings, spec)) => {
                    match settings.node_config(&slot.name, slot.ip, spec.role, &spec.traits) {
                        Ok(config) => Value::from(config_sha256(&config)),
                        Err(e) => {
                            diagnostics.push(
                                Diagnostic::error(
                                    "Invalid machine config",
                                    format!("{}: {e}", slot.name),
                                )
                                .at(patches.clone()),
                            );
                            Value::Unknown
                        }
                    }
                }
                None => Value::Unknown,
            };
            let server_id = match prior.iter().find(|n| n.name == slot.name) {
                Some(node) => Value::from(node.server_id),
                None => {
                    new_servers += 1;
                    Value::Unknown
                }
            };
            Value::object([
                ("name", Value::from(slot.name.as_str())),
                ("server_id", server_id),
                ("ip", Value::from(slot.ip.to_string())),
                ("config_sha256", sha),
            ])
        })
        .collect();
    (Value::List(nodes), new_servers)
}

/// A group of this provider instance's clients, ready for an operation.
struct Clients {
    client: Client,
    proxy: Option<SocketAddr>,
    trust: Trust,
}

impl Clients {
    async fn new(ctx: &Context, settings: &ClusterSettings) -> Result<Self, Diagnostic> {
        Ok(Self {
            client: ctx.hcloud()?,
            proxy: ctx.talos_proxy().await?,
            trust: settings.api_trust().map_err(|e| e.to_diagnostic())?,
        })
    }

    fn group<'a>(
        &'a self,
        settings: &'a ClusterSettings,
        spec: &'a GroupSpec,
        deadline: &'a Deadline,
        recorder: &'a Recorder,
    ) -> Group<'a> {
        Group {
            settings,
            spec,
            client: &self.client,
            proxy: self.proxy,
            trust: &self.trust,
            deadline,
            recorder,
        }
    }
}

/// What [`converge`] works on.
pub struct Run<'a> {
    pub ctx: &'a Context,
    pub settings: &'a ClusterSettings,
    pub spec: &'a GroupSpec,
    pub slots: &'a [NodeSlot],
    pub prior_nodes: Vec<NodeRecord>,
    pub timeout: Duration,
    /// Where preflight findings point.
    pub paths: &'a Paths,
    /// Whether the caller records the group's placement groups.
    pub placement_group_ids: bool,
}

/// What an apply did, also when it failed half-way.
pub struct Outcome {
    /// Every node whose server exists.
    pub nodes: Vec<NodeRecord>,
    pub placement_group_ids: Vec<i64>,
    /// Servers or placement groups of the group may exist (so state must
    /// keep the resource, or nothing would ever delete them).
    pub left_something: bool,
    pub diagnostics: Diagnostics,
    /// The operation's deadline, for what `finish` still waits on.
    pub deadline: Deadline,
}

/// Makes the group's servers match `slots` and brings the nodes up: the
/// control plane bootstrapped and healthy, or workers running kubelet.
/// `Err` means nothing was touched (the prior state stays).
pub async fn converge(run: Run<'_>) -> Result<Outcome, Diagnostics> {
    let clients = Clients::new(run.ctx, run.settings).await?;
    let new_servers = run
        .slots
        .iter()
        .filter(|s| !run.prior_nodes.iter().any(|n| n.name == s.name))
        .count();
    if new_servers > 0 {
        let target = Target::from(run.settings);
        let found = preflight(&clients.client, &target, run.spec, new_servers, run.paths).await;
        if found.has_errors() {
            return Err(found);
        }
    }
    let recorder = Recorder::new(&run.settings.cluster_name, &run.spec.group, run.prior_nodes);
    let deadline = Deadline::new(run.timeout, run.ctx.cancel.clone());
    let group = clients.group(run.settings, run.spec, &deadline, &recorder);
    let outcome = async {
        if run.spec.role == Role::ControlPlane {
            // Before the servers and their configs: nodes moving to the
            // load balancer need it, and a load balancer hct cannot use
            // stops the apply before anything else is touched.
            Endpoint {
                client: &clients.client,
                cluster: &run.settings.cluster_name,
                network_id: run.settings.network_id,
                location: &run.spec.location,
                plan: &run.settings.plan,
                deadline: &deadline,
            }
            .ensure()
            .await?;
        }
        group.converge(run.slots).await?;
        let nodes = recorder.nodes();
        match run.spec.role {
            Role::ControlPlane => bring_up::control_plane(&group, &nodes).await?,
            Role::Worker => bring_up::workers(&group, &nodes).await?,
        }
        // Back to `first_control_plane`: the load balancer goes once the
        // last of the cluster's nodes has moved off it.
        endpoint::retire(&group).await
    }
    .await;
    let mut diagnostics = Diagnostics::new();
    let failed = outcome.is_err();
    if let Err(e) = outcome {
        diagnostics.push(e.to_diagnostic());
    }
    let nodes = recorder.nodes();
    let mut left_something = !nodes.is_empty();
    let mut placement_group_ids = Vec::new();
    // A failure before the first server may still have created the
    // group's placement groups: look, to keep them in state.
    if run.placement_group_ids || (failed && !left_something) {
        match group.placement_group_ids().await {
            Ok(ids) => {
                left_something |= !ids.is_empty();
                if run.placement_group_ids {
                    placement_group_ids = ids;
                }
            }
            Err(e) => {
                left_something = true; // unknown: keep what may exist
                if run.placement_group_ids {
                    diagnostics.push(e.to_diagnostic());
                }
            }
        }
    }
    Ok(Outcome {
        nodes,
        placement_group_ids,
        left_something,
        diagnostics,
        deadline,
    })
}

/// Removes every node of the group (scale-down to nothing: graceful resets,
/// then the servers and placement groups). On failure, the nodes left.
pub async fn remove_all(
    ctx: &Context,
    settings: &ClusterSettings,
    spec: &GroupSpec,
    prior_nodes: Vec<NodeRecord>,
    timeout: Duration,
) -> Result<(), (Vec<NodeRecord>, Diagnostic)> {
    let recorder = Recorder::new(&settings.cluster_name, &spec.group, prior_nodes.clone());
    let clients = Clients::new(ctx, settings)
        .await
        .map_err(|d| (prior_nodes, d))?;
    let deadline = Deadline::new(timeout, ctx.cancel.clone());
    let group = clients.group(settings, spec, &deadline, &recorder);
    group
        .converge(&[])
        .await
        .map(|_| ())
        .map_err(|e: ClusterError| (recorder.nodes(), e.to_diagnostic()))
}

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
                config_sha256: None,
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
