//! The steps of a node group's lifecycle: plan its nodes, preflight,
//! converge and bring up, remove, refresh (drift), import.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cluster::bring_up;
use crate::cluster::budget::Budget;
use crate::cluster::endpoint::{self, Endpoint};
use crate::cluster::preflight::{self, Paths, Preflight};
use crate::cluster::settings::{ClusterSettings, NodeTraits, config_sha256};
use crate::cluster::wait::Deadline;
use crate::cluster::{ClusterError, Group, GroupSpec, NodeRecord, NodeSlot, Recorder};
use crate::hcloud::Client;
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
    /// The control plane's API load balancer, once whole (`load_balancer`
    /// mode only).
    pub api_load_balancer_id: Option<i64>,
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
    let deadline = Deadline::new(run.timeout, run.ctx.cancel.clone(), run.ctx.pace());
    let group = clients.group(run.settings, run.spec, &deadline, &recorder);
    let mut api_load_balancer_id = None;
    let outcome = async {
        if run.spec.role == Role::ControlPlane {
            // Before the servers and their configs: nodes moving to the
            // load balancer need it, and a load balancer hct cannot use
            // stops the apply before anything else is touched.
            api_load_balancer_id = Endpoint {
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
    let mut left_something = !nodes.is_empty() || api_load_balancer_id.is_some();
    // A control plane's apply makes its load balancer first: one that failed
    // later may have left it (billed) with no server.
    if let Some(ip) = run.settings.plan.load_balancer_ip()
        && failed
        && !left_something
        && run.spec.role == Role::ControlPlane
    {
        let cluster = &run.settings.cluster_name;
        let seen = endpoint::look(&clients.client, cluster, run.settings.network_id, ip).await;
        left_something = !matches!(seen, Ok(endpoint::Seen::Gone));
    }
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
        api_load_balancer_id,
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
    let deadline = Deadline::new(timeout, ctx.cancel.clone(), ctx.pace());
    let group = clients.group(settings, spec, &deadline, &recorder);
    group
        .converge(&[])
        .await
        .map(|_| ())
        .map_err(|e: ClusterError| (recorder.nodes(), e.to_diagnostic()))
}
