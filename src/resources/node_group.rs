//! The lifecycle `hct_cluster` and `hct_worker_pool` share: each manages
//! one group of nodes (the control plane, or a pool) and records it in
//! state the same way. What differs (where the settings come from, the
//! client configs, the pool's placement-group ids) stays in the resources.
//!
//! - plan: the node list with each node's server and config hash
//!   ([`plan_nodes`]), and preflight when servers are added or resized;
//! - apply: converge the servers and bring the nodes up ([`converge`]), or
//!   remove them all ([`remove_all`]);
//! - read: the servers that still exist, their configs read back, label and
//!   server-type drift ([`refresh`]);
//! - import: the group's servers by hct's labels ([`import`]).
//!
//! [`NodeGroupResource`] is the Terraform resource made of these steps; a
//! [`GroupKind`] supplies what is its own.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;

use crate::cluster::preflight::{Paths, Preflight};
use crate::cluster::settings::{ClusterSettings, config_sha256};
use crate::cluster::wait::Deadline;
use crate::cluster::{ClusterError, Group, GroupSpec, NodeRecord, NodeSlot, Recorder};
use crate::cluster::{bring_up, naming, running_config};
use crate::hcloud::Client;
use crate::hcloud::models::{Labels, Server};
use crate::network_plan::NetworkPlan;
use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::resources::timeouts::{self, Operation};
use crate::resources::values::{failed, set};
use crate::talos::Role;
use crate::talos::api::Trust;
use crate::talos::release::TalosVersion;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Schema, Type, Value};

/// The type of `control_plane_nodes` and `nodes`.
pub fn node_list_type() -> Type {
    Type::list(Type::Object(BTreeMap::from([
        ("name".to_string(), Type::String),
        ("server_id".to_string(), Type::Number),
        ("ip".to_string(), Type::String),
        ("config_sha256".to_string(), Type::String),
    ])))
}

pub const NODE_LIST_DESCRIPTION: &str = "The nodes in index order: `name` (the Hetzner server \
    name, also the Kubernetes node name), `server_id`, `ip` (private) and `config_sha256` (a \
    fingerprint of the machine config's meaning: of the config hct gave the node, and after each \
    refresh of the config the node runs, read back over the Talos API; a planned change here \
    means hct re-applies the node's config).";

pub fn nodes_value(nodes: &[NodeRecord]) -> Value {
    Value::List(
        nodes
            .iter()
            .map(|node| {
                Value::object([
                    ("name", Value::from(node.name.as_str())),
                    ("server_id", Value::from(node.server_id)),
                    ("ip", Value::from(node.ip.to_string())),
                    ("config_sha256", Value::from(node.config_sha256.clone())),
                ])
            })
            .collect(),
    )
}

/// The nodes recorded in state (entries with unknown ids or IPs are
/// skipped: the next apply adopts their servers again).
pub fn nodes_from(value: &Value) -> Vec<NodeRecord> {
    value
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|node| {
            Some(NodeRecord {
                name: node.get("name").as_str()?.to_string(),
                server_id: node.get("server_id").as_i64()?,
                ip: node.get("ip").as_str()?.parse().ok()?,
                config_sha256: node.get("config_sha256").as_str().map(str::to_string),
            })
        })
        .collect()
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
                    match settings.node_config(&slot.name, spec.role, &spec.traits) {
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
    pub diagnostics: Diagnostics,
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
        group.converge(run.slots).await?;
        let nodes = recorder.nodes();
        match run.spec.role {
            Role::ControlPlane => bring_up::control_plane(&group, &nodes).await,
            Role::Worker => bring_up::workers(&group, &nodes).await,
        }
    }
    .await;
    let mut diagnostics = Diagnostics::new();
    if let Err(e) = outcome {
        diagnostics.push(e.to_diagnostic());
    }
    let mut placement_group_ids = Vec::new();
    if run.placement_group_ids {
        match group.placement_group_ids().await {
            Ok(ids) => placement_group_ids = ids,
            Err(e) => diagnostics.push(e.to_diagnostic()),
        }
    }
    Ok(Outcome {
        nodes: recorder.nodes(),
        placement_group_ids,
        diagnostics,
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
        .map_err(|e| e.to_diagnostic(&format!("reading the servers of {}", recorded.group)))?;
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
    not_found: impl FnOnce() -> Diagnostic,
) -> Result<Imported, Diagnostics> {
    let client = ctx.hcloud()?;
    let servers = client
        .servers(&naming::group_selector(cluster, group))
        .await
        .map_err(|e| e.to_diagnostic(&format!("finding the servers of {group}")))?;
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

/// What a node-group resource prepares for an apply from its planned state.
pub struct Prepared {
    pub settings: ClusterSettings,
    pub spec: GroupSpec,
    pub slots: Vec<NodeSlot>,
    pub paths: Paths,
}

/// Where a group's refresh starts from, as its state has it.
pub struct StateGroup {
    pub cluster: String,
    pub group: String,
    pub network: Option<i64>,
    pub server_labels: Labels,
    pub server_type: Option<String>,
    pub settings: Result<ClusterSettings, String>,
}

/// One kind of node-group resource (`hct_cluster`, `hct_worker_pool`):
/// only what differs between them. [`NodeGroupResource`] turns it into a
/// Terraform resource with the lifecycle they share.
#[async_trait]
pub trait GroupKind: Send + Sync + 'static {
    const TYPE_NAME: &'static str;
    /// The state attribute with the node list.
    const NODES: &'static str;
    /// Whether the resource records its placement groups' ids.
    const PLACEMENT_GROUP_IDS: bool;

    fn schema() -> Schema;
    fn validate(config: &Value) -> Diagnostics;
    /// Changes it cannot make in place: replacements, or errors that say
    /// what to do instead.
    fn immutable_changes(prior: &Value, proposed: &Value, plan: &mut Plan);
    /// The rest of the plan: defaults, computed values, the node list,
    /// preflight.
    async fn plan(ctx: &Context, prior: &Value, plan: &mut Plan);
    /// The settings and nodes to converge, from the state to be (which it
    /// may complete, e.g. with generated secrets).
    fn prepare(state: &mut Value) -> Result<Prepared, Diagnostic>;
    /// Computed attributes after the apply, also after a failure.
    async fn finish(state: &mut Value, prepared: &Prepared, outcome: &mut Outcome);
    async fn destroy(ctx: &Context, prior: Value) -> Applied;
    /// The group as state records it, for a refresh.
    fn state_group(state: &Value) -> Option<StateGroup>;
    /// Writes drift into state; `None` when the object is gone.
    fn drifted(state: Value, refreshed: &Refreshed) -> Option<Value>;
    async fn import(ctx: &Context, id: &str) -> Result<Value, Diagnostics>;
}

/// A node-group resource of kind `K`.
pub struct NodeGroupResource<K>(PhantomData<K>);

impl<K> NodeGroupResource<K> {
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<K> Default for NodeGroupResource<K> {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl<K: GroupKind> Resource for NodeGroupResource<K> {
    fn type_name(&self) -> &'static str {
        K::TYPE_NAME
    }

    fn schema(&self) -> Schema {
        K::schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        K::validate(config)
    }

    async fn plan(&self, ctx: &Context, request: PlanRequest) -> Plan {
        if request.proposed.is_null() {
            return Plan::default();
        }
        let mut plan = Plan {
            planned: request.proposed.clone(),
            ..Plan::default()
        };
        if !request.prior.is_null() {
            K::immutable_changes(&request.prior, &request.proposed, &mut plan);
        }
        K::plan(ctx, &request.prior, &mut plan).await;
        plan
    }

    async fn apply(&self, ctx: &Context, request: ApplyRequest) -> Applied {
        if request.planned.is_null() {
            return K::destroy(ctx, request.prior).await;
        }
        let operation = if request.prior.is_null() {
            Operation::Create
        } else {
            Operation::Update
        };
        let timeout = match timeouts::limit(&request.config, operation) {
            Ok(t) => t,
            Err(d) => return failed(request.prior, d),
        };
        let mut state = request.planned.clone();
        let prepared = match K::prepare(&mut state) {
            Ok(p) => p,
            Err(d) => return failed(request.prior, d),
        };
        let run = Run {
            ctx,
            settings: &prepared.settings,
            spec: &prepared.spec,
            slots: &prepared.slots,
            prior_nodes: nodes_from(request.prior.get(K::NODES)),
            timeout,
            paths: &prepared.paths,
            placement_group_ids: K::PLACEMENT_GROUP_IDS,
        };
        let mut outcome = match converge(run).await {
            Ok(outcome) => outcome,
            Err(found) => {
                return Applied {
                    new_state: request.prior,
                    private: request.private,
                    diagnostics: found,
                };
            }
        };
        // Whatever happened, state gets every server that exists.
        set(&mut state, K::NODES, nodes_value(&outcome.nodes));
        K::finish(&mut state, &prepared, &mut outcome).await;
        if request.prior.is_null() && outcome.nodes.is_empty() && outcome.diagnostics.has_errors() {
            // Nothing was created: no state at all.
            state = Value::Null;
        }
        Applied {
            new_state: state,
            private: request.private,
            diagnostics: outcome.diagnostics,
        }
    }

    async fn read(
        &self,
        ctx: &Context,
        state: Value,
        _private: Vec<u8>,
    ) -> (Option<Value>, Diagnostics) {
        let Some(group) = K::state_group(&state) else {
            return (Some(state), Diagnostics::new());
        };
        let recorded = Recorded {
            cluster: &group.cluster,
            group: &group.group,
            network: group.network,
            nodes: nodes_from(state.get(K::NODES)),
            server_labels: &group.server_labels,
            server_type: group.server_type.as_deref(),
        };
        let refreshed = match refresh(ctx, recorded, group.settings).await {
            Ok(r) => r,
            Err(d) => return (Some(state), d.into()),
        };
        let mut state = state;
        set(&mut state, K::NODES, nodes_value(&refreshed.nodes));
        let warning = refreshed.warning.clone();
        (K::drifted(state, &refreshed), warning.into_iter().collect())
    }

    async fn import(&self, ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        K::import(ctx, id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_round_trip_through_state() {
        let nodes = vec![NodeRecord {
            name: "c-cp-1".into(),
            server_id: 7,
            ip: "10.0.128.17".parse().unwrap(),
            config_sha256: None,
        }];
        assert_eq!(nodes_from(&nodes_value(&nodes)), nodes);
    }
}
