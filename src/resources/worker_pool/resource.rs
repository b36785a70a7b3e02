//! `resource "hct_worker_pool"`: plan, apply, read and import of one pool,
//! over the node-group lifecycle it shares with the control plane
//! (`resources::node_group`); what is its own: settings from `worker_join`,
//! the pool's place in the network plan, its placement-group ids, and
//! removing its nodes on destroy.

use async_trait::async_trait;
use tracing::info;

use super::model::{self, CONFIG_INPUTS, attr};
use super::schema;
use crate::cluster::apply::{self, Outcome};
use crate::cluster::bootstrap::EtcdRecord;
use crate::cluster::preflight::{self, Target};
use crate::cluster::wait::Deadline;
use crate::cluster::{naming, slots};
use crate::network_plan::{CONTROL_PLANE_GROUP, placement_groups_for};
use crate::provider::{Applied, Context, Plan};
use crate::resources::node_group::{
    self, GroupKind, NodeGroupResource, Prepared, Refreshed, StateGroup, nodes_from, nodes_value,
};
use crate::resources::timeouts::{self, Operation};
use crate::resources::values::{failed, map_value, set, string_map};
use crate::talos::Role;
use crate::tf::{Diagnostic, Diagnostics, Schema, Value};

pub const TYPE_NAME: &str = "hct_worker_pool";

/// A worker pool as a node group.
pub struct WorkerPool;

pub type WorkerPoolResource = NodeGroupResource<WorkerPool>;

#[async_trait]
impl GroupKind for WorkerPool {
    const TYPE_NAME: &'static str = TYPE_NAME;
    const NODES: &'static str = "nodes";
    const SERVERS: &'static str = "the pool's servers";
    const PLACEMENT_GROUP_IDS: bool = true;
    const ROLE: Role = Role::Worker;

    const SCHEMA: fn() -> Schema = schema::schema;
    const VALIDATE: fn(&Value) -> Diagnostics = model::validate;
    async fn plan(ctx: &Context, prior: &Value, _config: &Value, plan: &mut Plan) {
        if !prior.is_null() {
            let proposed = plan.planned.clone();
            immutable_changes(prior, &proposed, plan);
        }
        let planned = &mut plan.planned;
        let Ok(settings) = model::settings(planned) else {
            for name in ["id", "nodes", "placement_group_ids"] {
                set(planned, name, Value::Unknown);
            }
            return;
        };
        if let Some(warning) = model::access_warning(&settings, std::time::SystemTime::now()) {
            plan.diagnostics.push(warning);
        }
        let pool = planned.get("name").as_str().unwrap_or_default().to_string();
        set(
            planned,
            "id",
            Value::from(format!("{}/{pool}", settings.cluster_name)),
        );
        let Some(pool_plan) = settings.plan.worker_pools().get(&pool) else {
            plan.diagnostics.push(model::not_in_plan(&pool, &settings));
            return;
        };
        let slots = slots::of(&settings.cluster_name, &pool, pool_plan);
        let spec = model::group_spec(planned);
        let known = CONFIG_INPUTS
            .iter()
            .all(|name| planned.get(name).is_wholly_known());
        let (nodes, new_servers) = node_group::plan_nodes(
            &slots,
            &nodes_from(prior.get("nodes")),
            known.then_some((&settings, &spec)),
            &attr("config_patches"),
            &mut plan.diagnostics,
        );
        set(planned, "nodes", nodes);
        let groups_same = prior
            .get("placement_group_ids")
            .as_list()
            .is_some_and(|ids| ids.len() as u32 == placement_groups_for(slots.len() as u32));
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
            let target = Target::from(&settings);
            plan.diagnostics.extend(
                preflight::group(&client, &target, &spec, new_servers, &model::paths()).await,
            );
            if new_servers > 0 {
                plan.diagnostics
                    .extend(same_secrets_as_control_plane(&client, &settings).await);
            }
        }
        if new_servers > 0 && known {
            let found = node_group::strangers(
                ctx,
                &settings.cluster_name,
                Some(&pool),
                settings.network_id,
                &nodes_from(prior.get("nodes")),
                Some(&settings.keys),
            )
            .await;
            plan.diagnostics.extend(found);
        }
    }

    fn prepare(state: &mut Value) -> Result<Prepared, Diagnostic> {
        let settings = model::settings(state).map_err(invalid_join)?;
        let pool = state.get("name").as_str().unwrap_or_default().to_string();
        let Some(pool_plan) = settings.plan.worker_pools().get(&pool) else {
            return Err(model::not_in_plan(&pool, &settings));
        };
        Ok(Prepared {
            slots: slots::of(&settings.cluster_name, &pool, pool_plan),
            spec: model::group_spec(state),
            settings,
            paths: model::paths(),
        })
    }

    async fn finish(
        _ctx: &Context,
        _prior: &Value,
        state: &mut Value,
        _prepared: &Prepared,
        outcome: &mut Outcome,
    ) {
        let ids = std::mem::take(&mut outcome.placement_group_ids);
        set(
            state,
            "placement_group_ids",
            Value::List(ids.into_iter().map(Value::from).collect()),
        );
    }

    async fn destroy(ctx: &Context, prior: Value) -> Applied {
        destroy(ctx, prior).await
    }

    fn state_group(state: &Value) -> Option<StateGroup> {
        let (cluster, pool) = state.get("id").as_str()?.split_once('/')?;
        let settings = model::settings(state);
        Some(StateGroup {
            cluster: cluster.to_string(),
            group: pool.to_string(),
            network: settings.as_ref().ok().map(|s| s.network_id),
            server_labels: string_map(state.get("server_labels")),
            server_type: state.get("server_type").as_str().map(str::to_string),
            settings,
        })
    }

    fn drifted(mut state: Value, refreshed: &Refreshed, _etcd: EtcdRecord) -> Option<Value> {
        if let Some(labels) = &refreshed.drifted_labels {
            set(&mut state, "server_labels", map_value(labels));
        }
        if let Some(server_type) = &refreshed.drifted_server_type {
            set(&mut state, "server_type", Value::from(server_type.as_str()));
        }
        Some(state)
    }

    async fn import(ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        let Some((cluster, pool)) = id.split_once('/') else {
            return Err(Diagnostic::error(
                "Invalid import id",
                format!("{id:?}: import a worker pool as <cluster>/<pool>, e.g. noreturn/general."),
            )
            .into());
        };
        let imported = node_group::import(ctx, cluster, pool, Self::SERVERS, || {
            Diagnostic::error(
                "Worker pool not found",
                format!("No server labelled managed-by=hct,cluster={cluster},pool={pool} exists."),
            )
        })
        .await?;
        let client = ctx.hcloud().map_err(Diagnostics::from)?;
        let groups: Vec<Value> = client
            .placement_groups(&naming::group_selector(cluster, pool))
            .await
            .map_err(|e| Diagnostics::from(e.to_diagnostic("finding the pool's placement groups")))?
            .into_iter()
            .map(|g| Value::from(g.id))
            .collect();
        let first = imported.first();
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
            ("nodes", nodes_value(&imported.nodes)),
            ("placement_group_ids", Value::List(groups)),
        ]))
    }
}

/// A new name replaces the pool; a new server type resizes each server in
/// place; servers cannot move to another location.
fn immutable_changes(prior: &Value, proposed: &Value, plan: &mut Plan) {
    if prior.get("name") != proposed.get("name") && !proposed.get("name").is_unknown() {
        plan.requires_replace.push(attr("name"));
    }
    let (before, after) = (prior.get("location"), proposed.get("location"));
    if !before.is_null() && !after.is_unknown() && before != after {
        plan.diagnostics.push(
            Diagnostic::error(
                "location cannot change in place",
                format!(
                    "Servers cannot move: changing location from {} to {} needs new servers. \
                     Add a new pool at the new location, move the workloads, then remove this \
                     one.",
                    before.to_json(),
                    after.to_json()
                ),
            )
            .at(attr("location")),
        );
    }
}

/// New nodes of a pool whose `worker_join` holds other secrets than the
/// control plane's servers were made with (their labels name the secrets)
/// could never join: an error at plan time. No control plane yet is fine
/// (the parallel form creates both together).
async fn same_secrets_as_control_plane(
    client: &crate::hcloud::Client,
    settings: &crate::cluster::ClusterSettings,
) -> Option<Diagnostic> {
    let selector = naming::group_selector(&settings.cluster_name, CONTROL_PLANE_GROUP);
    let servers = client.servers(&selector).await.ok()?;
    let fingerprint = settings.secrets_fingerprint();
    let other = servers.iter().find(|s| {
        s.labels
            .get(naming::SECRETS)
            .is_some_and(|f| *f != fingerprint)
    })?;
    Some(
        Diagnostic::error(
            "worker_join is not this cluster's",
            format!(
                "The control plane of cluster {} ({} and its peers) was made with other machine \
                 secrets than this pool's worker_join holds, so the pool's nodes could never \
                 join. Set worker_join to the bundle the cluster takes: \
                 hct_cluster_secrets.<name>.worker_join (the parallel form) or \
                 hct_cluster.<name>.worker_join (the serial form).",
                settings.cluster_name, other.name
            ),
        )
        .at(attr("worker_join")),
    )
}

fn invalid_join(why: String) -> Diagnostic {
    Diagnostic::error("Invalid worker_join", why).at(attr("worker_join"))
}

/// Removes the pool's nodes: each reset gracefully, then its server and
/// the pool's placement groups deleted.
async fn destroy(ctx: &Context, prior: Value) -> Applied {
    let timeout = match timeouts::limit(&prior, Operation::Delete) {
        Ok(t) => t,
        Err(d) => return failed(prior, d),
    };
    let settings = match model::settings(&prior) {
        Ok(s) => s,
        Err(why) => return failed(prior, invalid_join(why)),
    };
    let spec = model::group_spec(&prior);
    info!(pool = %spec.group, "removing the pool's nodes");
    let clients = match node_group::clients(ctx, &settings).await {
        Ok(c) => c,
        Err(d) => return failed(prior, d),
    };
    let deadline = Deadline::new(timeout, ctx.cancel.clone(), ctx.pace());
    let nodes = nodes_from(prior.get("nodes"));
    match apply::remove_all(&clients, &settings, &spec, nodes, &deadline).await {
        Ok(()) => Applied::default(),
        Err((left, e)) => {
            let mut state = prior;
            set(&mut state, "nodes", nodes_value(&left));
            failed(state, e.to_diagnostic())
        }
    }
}
