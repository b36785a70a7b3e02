//! `hct_worker_pool`: one pool of private Talos workers joined to an
//! `hct_cluster` through its `worker_join`. The pool's CIDR and node count
//! come from the network plan; scaling is a change of the plan's `nodes`
//! (new nodes take the next IPs; removed ones go highest index first, each
//! reset gracefully before its server is deleted).

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use tracing::info;

use crate::cluster::bring_up;
use crate::cluster::naming;
use crate::cluster::preflight::{self, Paths, Preflight};
use crate::cluster::provision::{Group, GroupSpec, Recorder};
use crate::cluster::settings::{ClusterSettings, NodeTraits, WorkerJoin, config_sha256};
use crate::cluster::slots;
use crate::cluster::wait::Deadline;
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::resources::common::{
    self, NODE_LIST_DESCRIPTION, drifted_labels, drifted_server_type, failed, imported_nodes,
    map_value, node_list_type, nodes_from, nodes_value, refresh_nodes, refresh_running_configs,
    set, string_list, string_map, timeouts_block, validate_server_labels,
};
use crate::talos::Role;
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Mode, Nesting, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_worker_pool";

const CREATE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const UPDATE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const DELETE_TIMEOUT: Duration = Duration::from_secs(15 * 60);
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

pub struct WorkerPoolResource;

fn attr(name: &str) -> AttrPath {
    AttrPath::attr(name)
}

#[async_trait]
impl Resource for WorkerPoolResource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        Schema::new(
            0,
            "A pool of private-only Talos workers of an `hct_cluster`. Its CIDR and node count \
             come from the network plan's `worker_pools.<name>`: change `nodes` there to scale \
             (up takes the next IPs; down removes the highest indexes first, each node reset \
             gracefully before its server is deleted). Nodes are named `<cluster>-<pool>-<n>`; \
             hct waits until each is configured and runs kubelet (Kubernetes `Ready` needs the \
             CNI, installed afterwards with the plan's `cilium_values`).",
        )
        .attribute(
            Attribute::required("worker_join", Type::String)
                .sensitive()
                .description("`hct_cluster.<name>.worker_join`."),
        )
        .attribute(Attribute::required("name", Type::String).description(
            "The pool: a key of the plan's `worker_pools`. Changing it replaces the pool.",
        ))
        .attribute(
            Attribute::required("server_type", Type::String).description(
                "e.g. `cx33`. A change resizes each server in place, one at a time (ACPI \
                     shutdown, Hetzner's `change_type` keeping the disk size, power on, back in \
                     service); the new type must have the same architecture.",
            ),
        )
        .attribute(Attribute::required("location", Type::String).description(
            "e.g. `nbg1` (a datacenter such as `nbg1-dc3` is accepted with a warning). Servers \
             cannot move, so a change is refused at plan time: add a pool at the new location \
             instead.",
        ))
        .attribute(
            Attribute::optional("node_labels", Type::map(Type::String))
                .description("Kubernetes node labels, e.g. `{ purpose = \"platform\" }`."),
        )
        .attribute(
            Attribute::nested(
                "node_taints",
                Mode::Optional,
                Nesting::List,
                vec![
                    Attribute::required("key", Type::String),
                    Attribute::optional("value", Type::String),
                    Attribute::required("effect", Type::String)
                        .description("`NoSchedule`, `PreferNoSchedule` or `NoExecute`."),
                ],
            )
            .description(
                "Kubernetes taints registered with each node: `[{ key, value, effect }]`.",
            ),
        )
        .attribute(
            Attribute::optional("server_labels", Type::map(Type::String)).description(
                "Hetzner labels for the servers, besides hct's own. Changed labels are restored.",
            ),
        )
        .attribute(
            Attribute::optional("config_patches", Type::list(Type::String)).description(
                "Talos config patches applied last, in order, to this pool's configs.",
            ),
        )
        .attribute(Attribute::computed("id", Type::String).description("`<cluster>/<pool>`."))
        .attribute(
            Attribute::computed("nodes", node_list_type()).description(NODE_LIST_DESCRIPTION),
        )
        .attribute(
            Attribute::computed("placement_group_ids", Type::list(Type::Number))
                .description("The pool's spread placement groups (10 servers each at most)."),
        )
        .block(timeouts_block("30m", "30m", "15m"))
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let mut found = Diagnostics::new();
        if let Some(name) = config.get("name").as_str()
            && (name == CONTROL_PLANE_GROUP || !crate::talos::config::is_cluster_name(name))
        {
            found.push(
                Diagnostic::error(
                    "Invalid pool name",
                    format!(
                        "name = {name:?}: use a key of the plan's worker_pools (lower-case letters, \
                         digits, `-`; not \"cp\")."
                    ),
                )
                .at(attr("name")),
            );
        }
        if let Some(text) = config.get("worker_join").as_str()
            && let Err(why) = WorkerJoin::decode(text)
        {
            found.push(Diagnostic::error("Invalid worker_join", why).at(attr("worker_join")));
        }
        if let Some(location) = config.get("location").as_str() {
            found.extend(preflight::location(location, attr("location")).1);
        }
        found.extend(validate_server_labels(
            config.get("server_labels"),
            attr("server_labels"),
        ));
        for (i, taint) in config
            .get("node_taints")
            .as_list()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if let Some(effect) = taint.get("effect").as_str()
                && !TAINT_EFFECTS.contains(&effect)
            {
                found.push(
                    Diagnostic::error(
                        "Invalid taint effect",
                        format!("{effect:?}: use one of {}.", TAINT_EFFECTS.join(", ")),
                    )
                    .at(attr("node_taints").index(i as i64).attr_of("effect")),
                );
            }
        }
        found.extend(common::validate_timeouts(config));
        found
    }

    async fn plan(&self, ctx: &Context, request: PlanRequest) -> Plan {
        if request.proposed.is_null() {
            return Plan::default();
        }
        let mut plan = Plan {
            planned: request.proposed.clone(),
            ..Plan::default()
        };
        let prior = &request.prior;
        if !prior.is_null() {
            if prior.get("name") != request.proposed.get("name")
                && !request.proposed.get("name").is_unknown()
            {
                plan.requires_replace.push(attr("name"));
            }
            // A new server_type resizes each server in place; servers
            // cannot move to another location.
            let (before, after) = (prior.get("location"), request.proposed.get("location"));
            if !before.is_null() && !after.is_unknown() && before != after {
                plan.diagnostics.push(
                    Diagnostic::error(
                        "location cannot change in place",
                        format!(
                            "Servers cannot move: changing location from {} to {} needs new \
                             servers. Add a new pool at the new location, move the workloads, \
                             then remove this one.",
                            before.to_json(),
                            after.to_json()
                        ),
                    )
                    .at(attr("location")),
                );
            }
        }
        let planned = &mut plan.planned;
        let join = planned
            .get("worker_join")
            .as_str()
            .and_then(|t| WorkerJoin::decode(t).ok());
        let settings = join.as_ref().and_then(|j| j.settings().ok());
        let Some(settings) = settings else {
            for name in ["id", "nodes", "placement_group_ids"] {
                set(planned, name, Value::Unknown);
            }
            return plan;
        };
        let pool = planned.get("name").as_str().unwrap_or_default().to_string();
        set(
            planned,
            "id",
            Value::from(format!("{}/{pool}", settings.cluster_name)),
        );
        let Some(pool_plan) = settings.plan.worker_pools().get(&pool) else {
            plan.diagnostics.push(not_in_plan(&pool, &settings));
            return plan;
        };
        let slots = slots::of(&settings.cluster_name, &pool, pool_plan);
        let spec = group_spec(planned);
        let known = [
            "name",
            "server_type",
            "location",
            "node_labels",
            "node_taints",
            "config_patches",
        ]
        .iter()
        .all(|name| planned.get(name).is_wholly_known());
        let prior_nodes = nodes_from(prior.get("nodes"));
        let mut new_servers = 0;
        let mut nodes = Vec::new();
        for slot in &slots {
            let sha = if known {
                match settings.node_config(&slot.name, Role::Worker, &spec.traits) {
                    Ok(config) => Value::from(config_sha256(&config)),
                    Err(e) => {
                        plan.diagnostics.push(
                            Diagnostic::error(
                                "Invalid machine config",
                                format!("{}: {e}", slot.name),
                            )
                            .at(attr("config_patches")),
                        );
                        Value::Unknown
                    }
                }
            } else {
                Value::Unknown
            };
            let server_id = match prior_nodes.iter().find(|n| n.name == slot.name) {
                Some(node) => Value::from(node.server_id),
                None => {
                    new_servers += 1;
                    Value::Unknown
                }
            };
            nodes.push(Value::object([
                ("name", Value::from(slot.name.as_str())),
                ("server_id", server_id),
                ("ip", Value::from(slot.ip.to_string())),
                ("config_sha256", sha),
            ]));
        }
        set(planned, "nodes", Value::List(nodes));
        let groups_same = prior
            .get("placement_group_ids")
            .as_list()
            .is_some_and(|ids| ids.len() as u32 == slots::placement_groups_for(slots.len() as u32));
        let ids = if groups_same {
            prior.get("placement_group_ids").clone()
        } else {
            Value::Unknown
        };
        set(planned, "placement_group_ids", ids);

        let new_type = !prior.is_null() && prior.get("server_type") != planned.get("server_type");
        if (new_servers > 0 || new_type)
            && known
            && let Ok(client) = ctx.hcloud()
        {
            plan.diagnostics
                .extend(preflight_pool(&client, &settings, &spec, new_servers).await);
        }
        plan
    }

    async fn apply(&self, ctx: &Context, request: ApplyRequest) -> Applied {
        let destroying = request.planned.is_null();
        let value = if destroying {
            &request.prior
        } else {
            &request.planned
        };
        let operation = match (destroying, request.prior.is_null()) {
            (true, _) => "delete",
            (false, true) => "create",
            (false, false) => "update",
        };
        let default = match operation {
            "delete" => DELETE_TIMEOUT,
            "create" => CREATE_TIMEOUT,
            _ => UPDATE_TIMEOUT,
        };
        let timeout = match common::timeout(
            if destroying {
                &request.prior
            } else {
                &request.config
            },
            operation,
            default,
        ) {
            Ok(t) => t,
            Err(d) => return failed(request.prior, d),
        };
        let settings = match value
            .get("worker_join")
            .as_str()
            .ok_or_else(|| "worker_join is not set".to_string())
            .and_then(WorkerJoin::decode)
            .and_then(|j| j.settings())
        {
            Ok(s) => s,
            Err(why) => {
                return failed(
                    request.prior,
                    Diagnostic::error("Invalid worker_join", why).at(attr("worker_join")),
                );
            }
        };
        let (client, proxy) = match (ctx.hcloud(), ctx.talos_proxy().await) {
            (Ok(c), Ok(p)) => (c, p),
            (Err(d), _) | (_, Err(d)) => return failed(request.prior, d),
        };
        let trust = match settings.api_trust() {
            Ok(t) => t,
            Err(e) => return failed(request.prior, e.to_diagnostic()),
        };
        let pool = value.get("name").as_str().unwrap_or_default().to_string();
        let spec = group_spec(value);
        let recorder = Recorder::new(
            &settings.cluster_name,
            &pool,
            nodes_from(request.prior.get("nodes")),
        );
        let deadline = Deadline::new(timeout, ctx.cancel.clone());
        let group = Group {
            settings: &settings,
            spec: &spec,
            client: &client,
            proxy,
            trust: &trust,
            deadline: &deadline,
            recorder: &recorder,
        };

        if destroying {
            info!(pool, "removing the pool's nodes");
            return match group.converge(&[]).await {
                Ok(_) => Applied::default(),
                Err(e) => {
                    let mut state = request.prior.clone();
                    set(&mut state, "nodes", nodes_value(&recorder.nodes()));
                    failed(state, e.to_diagnostic())
                }
            };
        }

        let Some(pool_plan) = settings.plan.worker_pools().get(&pool) else {
            return failed(request.prior, not_in_plan(&pool, &settings));
        };
        let slots = slots::of(&settings.cluster_name, &pool, pool_plan);
        let new_servers = slots
            .iter()
            .filter(|s| !recorder.nodes().iter().any(|n| n.name == s.name))
            .count();
        if new_servers > 0 {
            let found = preflight_pool(&client, &settings, &spec, new_servers).await;
            if found.has_errors() {
                return Applied {
                    new_state: request.prior,
                    private: request.private,
                    diagnostics: found,
                };
            }
        }
        let mut diagnostics = Diagnostics::new();
        let outcome = async {
            group.converge(&slots).await?;
            bring_up::workers(&group, &recorder.nodes()).await
        }
        .await;
        if let Err(e) = outcome {
            diagnostics.push(e.to_diagnostic());
        }
        let mut state = request.planned.clone();
        set(&mut state, "nodes", nodes_value(&recorder.nodes()));
        match group.placement_group_ids().await {
            Ok(ids) => set(
                &mut state,
                "placement_group_ids",
                Value::List(ids.into_iter().map(Value::from).collect()),
            ),
            Err(e) => {
                set(&mut state, "placement_group_ids", Value::List(vec![]));
                diagnostics.push(e.to_diagnostic());
            }
        }
        if request.prior.is_null() && recorder.nodes().is_empty() && diagnostics.has_errors() {
            state = Value::Null;
        }
        Applied {
            new_state: state,
            private: request.private,
            diagnostics,
        }
    }

    async fn read(
        &self,
        ctx: &Context,
        state: Value,
        _private: Vec<u8>,
    ) -> (Option<Value>, Diagnostics) {
        let client = match ctx.hcloud() {
            Ok(c) => c,
            Err(d) => return (Some(state), d.into()),
        };
        let Some((cluster, pool)) = state.get("id").as_str().and_then(|id| id.split_once('/'))
        else {
            return (Some(state), Diagnostics::new());
        };
        let (cluster, pool) = (cluster.to_string(), pool.to_string());
        let servers = match client
            .servers(&naming::group_selector(&cluster, &pool))
            .await
        {
            Ok(s) => s,
            Err(e) => {
                return (
                    Some(state),
                    e.to_diagnostic("reading the pool's servers").into(),
                );
            }
        };
        let join = state
            .get("worker_join")
            .as_str()
            .ok_or_else(|| "no worker_join in state".to_string())
            .and_then(WorkerJoin::decode);
        let network = join.as_ref().ok().map(|j| j.network_id);
        let mut state = state;
        let mut diagnostics = Diagnostics::new();
        let mut nodes = refresh_nodes(nodes_from(state.get("nodes")), &servers, network);
        let settings = join.and_then(|j| j.settings());
        if let Some(warning) = refresh_running_configs(ctx, &mut nodes, settings).await {
            diagnostics.push(warning);
        }
        set(&mut state, "nodes", nodes_value(&nodes));
        if let Some(drifted) = drifted_labels(&servers, &string_map(state.get("server_labels"))) {
            set(&mut state, "server_labels", map_value(&drifted));
        }
        if let Some(drifted) = drifted_server_type(&servers, state.get("server_type").as_str()) {
            set(&mut state, "server_type", Value::from(drifted));
        }
        (Some(state), diagnostics)
    }

    async fn import(&self, ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        let Some((cluster, pool)) = id.split_once('/') else {
            return Err(Diagnostic::error(
                "Invalid import id",
                format!("{id:?}: import a worker pool as <cluster>/<pool>, e.g. noreturn/general."),
            )
            .into());
        };
        let client = ctx.hcloud().map_err(Diagnostics::from)?;
        let servers = client
            .servers(&naming::group_selector(cluster, pool))
            .await
            .map_err(|e| Diagnostics::from(e.to_diagnostic("finding the pool's servers")))?;
        let Some(first) = servers.first() else {
            return Err(Diagnostic::error(
                "Worker pool not found",
                format!("No server labelled managed-by=hct,cluster={cluster},pool={pool} exists."),
            )
            .into());
        };
        let (_, nodes) = imported_nodes(&servers, cluster, pool);
        let groups: Vec<Value> = client
            .placement_groups(&naming::group_selector(cluster, pool))
            .await
            .map_err(|e| Diagnostics::from(e.to_diagnostic("finding the pool's placement groups")))?
            .into_iter()
            .map(|g| Value::from(g.id))
            .collect();
        let user_labels = naming::user_labels(&first.labels);
        Ok(Value::object([
            ("id", Value::from(id)),
            ("name", Value::from(pool)),
            ("server_type", Value::from(first.server_type.name.as_str())),
            (
                "location",
                Value::from(first.location.as_ref().map(|l| l.name.clone())),
            ),
            (
                "server_labels",
                if user_labels.is_empty() {
                    Value::Null
                } else {
                    map_value(&user_labels)
                },
            ),
            ("nodes", nodes_value(&nodes)),
            ("placement_group_ids", Value::List(groups)),
        ]))
    }
}

fn group_spec(value: &Value) -> GroupSpec {
    let (location, _) = preflight::location(
        value.get("location").as_str().unwrap_or_default(),
        attr("location"),
    );
    let node_taints: BTreeMap<String, String> = value
        .get("node_taints")
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            let key = t.get("key").as_str()?.to_string();
            let effect = t.get("effect").as_str()?;
            let talos = match t.get("value").as_str() {
                Some(v) if !v.is_empty() => format!("{v}:{effect}"),
                _ => effect.to_string(),
            };
            Some((key, talos))
        })
        .collect();
    GroupSpec {
        group: value.get("name").as_str().unwrap_or_default().to_string(),
        role: Role::Worker,
        server_type: value
            .get("server_type")
            .as_str()
            .unwrap_or_default()
            .to_string(),
        location,
        server_labels: string_map(value.get("server_labels")),
        traits: NodeTraits {
            node_labels: string_map(value.get("node_labels")),
            node_taints,
            config_patches: string_list(value.get("config_patches")),
        },
    }
}

async fn preflight_pool(
    client: &crate::hcloud::Client,
    settings: &ClusterSettings,
    spec: &GroupSpec,
    new_servers: usize,
) -> Diagnostics {
    Preflight {
        network_id: settings.network_id,
        plan: &settings.plan,
        image_id: Some(&settings.image_id),
        talos_version: &settings.talos_version,
        server_type: &spec.server_type,
        location: &spec.location,
        new_servers,
        paths: Paths {
            network_id: attr("worker_join"),
            network_plan: attr("worker_join"),
            image_id: attr("worker_join"),
            server_type: attr("server_type"),
            location: attr("location"),
        },
    }
    .run(client)
    .await
}

fn not_in_plan(pool: &str, settings: &ClusterSettings) -> Diagnostic {
    let pools: Vec<&str> = settings
        .plan
        .worker_pools()
        .keys()
        .map(String::as_str)
        .collect();
    Diagnostic::error(
        "Pool not in the network plan",
        format!(
            "The network plan of cluster {} has no worker pool {pool:?} (it has: {}). Add \
             worker_pools.{pool} = {{ cidr = ..., nodes = ... }} to data \"hct_network_plan\", or \
             use one of its pools.",
            settings.cluster_name,
            if pools.is_empty() {
                "none".to_string()
            } else {
                pools.join(", ")
            }
        ),
    )
    .at(attr("name"))
}
