//! `hct_cluster_secrets`: the schema (the settings of `settings_schema`,
//! the computed `worker_join`), plan (defaults, the changes the settings
//! cannot take, the bundle known once the secrets are) and apply (secrets
//! generated, never at plan: Terraform requires planned values to stay).

use async_trait::async_trait;
use tracing::info;

use crate::cluster::ClusterSettings;
use crate::cluster::preflight::{Paths, Preflight};
use crate::cluster::settings::Keys;
use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::resources::cluster::model;
use crate::resources::cluster::settings_plan::{self, fill_defaults, settings_known};
use crate::resources::cluster::settings_schema::settings_attributes;
use crate::resources::node_group;
use crate::resources::values::{failed, set};
use crate::talos::Secrets;
use crate::talos::release::TalosVersion;
use crate::tf::{Attribute, Diagnostic, Diagnostics, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_cluster_secrets";

pub struct ClusterSecretsResource;

fn schema() -> Schema {
    let schema = Schema::new(
        0,
        "A cluster's machine secrets (talosctl's `secrets.yaml`, generated at apply, or adopted) \
         and its cluster-wide settings, bundled as `worker_join`: the one source `hct_cluster` \
         and its `hct_worker_pool`s read (`worker_join = hct_cluster_secrets.<name>.worker_join` \
         in each; `hct_cluster` also takes `machine_secrets`). Creating it is instant and calls nothing remote, so Terraform can start the \
         pools beside the control plane: their servers are created, attached, booted and \
         configured while the control plane comes up, and join once it can take them. Its plan \
         checks the network (range, node subnet, route `0.0.0.0/0`, the 100-server limit) and \
         the image against Hetzner, as `hct_cluster`'s does in the serial form; server types and \
         locations are checked by the cluster and the pools (at plan time once the secrets \
         exist, else before their first server is created). Changing a setting here changes the cluster and every pool (a Talos upgrade still goes control \
         plane first: pools wait until every control plane runs the new release).",
    );
    settings_attributes(true)
        .into_iter()
        .fold(schema, Schema::attribute)
        .attribute(Attribute::computed("id", Type::String).description("The cluster's name."))
        .attribute(
            Attribute::computed("worker_join", Type::String)
                .sensitive()
                .description(
                    "The settings for `hct_cluster.worker_join` and `hct_worker_pool.worker_join` \
                     (sensitive): the worker share of the secrets (join tokens and CA \
                     certificates; no CA key, so give `hct_cluster` `machine_secrets` too) and \
                     client certificates for the pools, valid for a year and issued again by \
                     a plan in their last month. Known at plan time once the secrets exist \
                     (the certificates follow from the CAs' keys and a 30-day period, so plan and \
                     apply agree).",
                ),
        )
}

/// The settings of a wholly known planned state; None while any is unknown.
fn planned_settings(planned: &Value) -> Result<Option<ClusterSettings>, Diagnostic> {
    let Value::String(text) = planned.get("machine_secrets") else {
        return Ok(None);
    };
    if !settings_known(planned) {
        return Ok(None);
    }
    let secrets = Secrets::from_yaml(text).map_err(|e| {
        Diagnostic::error("Invalid machine_secrets", e.to_string())
            .at(model::attr("machine_secrets"))
    })?;
    model::settings(planned, secrets).map(Some)
}

/// The checks of the network and the image against Hetzner, at plan time
/// of a new cluster or new values (the groups check their server types and
/// locations once the bundle is known, at the latest before a server is
/// created). On create, the plan's nodes count towards the network's limit.
async fn preflight(ctx: &Context, prior: &Value, planned: &Value) -> Diagnostics {
    let inputs = ["network_id", "network_plan", "image_id", "talos_version"];
    let changed = prior.is_null() || inputs.iter().any(|n| prior.get(n) != planned.get(n));
    // An image built in the same apply is checked at apply.
    let needed = ["network_id", "network_plan", "talos_version"];
    if !changed || !needed.iter().all(|n| planned.get(n).is_wholly_known()) {
        return Diagnostics::new();
    }
    let (Ok(plan), Ok(talos_version), Ok(client)) = (
        model::parse_plan(model::text(planned, "network_plan")),
        TalosVersion::parse(model::text(planned, "talos_version")),
        ctx.hcloud(),
    ) else {
        return Diagnostics::new();
    };
    let new_servers = if prior.is_null() {
        let pools: u32 = plan.worker_pools().values().map(|p| p.nodes).sum();
        (plan.control_plane().nodes + pools) as usize
    } else {
        0
    };
    let check = Preflight {
        network_id: planned.get("network_id").as_i64().unwrap_or_default(),
        plan: &plan,
        image_id: planned.get("image_id").as_str(),
        talos_version: &talos_version,
        server_type: "",
        location: "",
        new_servers,
        load_balancer_type: None,
        paths: Paths {
            network_id: model::attr("network_id"),
            network_plan: model::attr("network_plan"),
            image_id: model::attr("image_id"),
            server_type: model::attr("name"),
            location: model::attr("name"),
        },
    };
    check.cluster_wide(&client).await.0
}

/// New secrets for a cluster name: no server of that name may exist that
/// these secrets did not make (another workspace's cluster, or this one's
/// after its state was lost), unless hct can prove it holds nothing.
async fn strangers(ctx: &Context, planned: &Value) -> Diagnostics {
    let (Some(cluster), Some(network)) = (
        planned.get("name").as_str(),
        planned.get("network_id").as_i64(),
    ) else {
        return Diagnostics::new();
    };
    let keys = planned
        .get("machine_secrets")
        .as_str()
        .and_then(|text| Secrets::from_yaml(text).ok())
        .map(Keys::Cluster);
    node_group::strangers(ctx, cluster, None, network, &[], keys.as_ref()).await
}

#[async_trait]
impl Resource for ClusterSecretsResource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        model::validate_settings(config)
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
        // Optional: unset means none.
        set(
            &mut plan.planned,
            "ssh_key_ids",
            request.config.get("ssh_key_ids").clone(),
        );
        if !prior.is_null() {
            let proposed = plan.planned.clone();
            settings_plan::settings_changes(prior, &proposed, None, &mut plan);
        }
        fill_defaults(&mut plan.planned, prior);
        if plan.planned.get("config_delivery").as_str() == Some("user_data") {
            plan.diagnostics
                .push(model::user_data_warning(&plan.planned));
        }
        let name = plan.planned.get("name").clone();
        set(&mut plan.planned, "id", name);
        match planned_settings(&plan.planned) {
            Ok(Some(settings)) => {
                match settings_plan::planned_join(&settings, prior.get("worker_join")) {
                    Ok(join) => set(&mut plan.planned, "worker_join", join),
                    Err(d) => plan.diagnostics.push(d),
                }
            }
            Ok(None) => set(&mut plan.planned, "worker_join", Value::Unknown),
            Err(d) => plan.diagnostics.push(d),
        }
        let found = preflight(ctx, prior, &plan.planned).await;
        plan.diagnostics.extend(found);
        if prior.is_null() {
            let found = strangers(ctx, &plan.planned).await;
            plan.diagnostics.extend(found);
        }
        plan
    }

    async fn apply(&self, _ctx: &Context, request: ApplyRequest) -> Applied {
        if request.planned.is_null() {
            // Nothing remote: forgetting the secrets is all. (The cluster,
            // which depends on them, is destroyed first.)
            return Applied::default();
        }
        let mut state = request.planned.clone();
        if state.get("machine_secrets").is_unknown() {
            info!("generating the cluster's machine secrets");
            match Secrets::generate() {
                Ok(secrets) => set(
                    &mut state,
                    "machine_secrets",
                    Value::from(secrets.to_yaml()),
                ),
                Err(e) => {
                    return failed(
                        request.prior,
                        Diagnostic::error("Could not generate machine secrets", e.to_string()),
                    );
                }
            }
        }
        // Known at plan: kept as planned; else with access issued now.
        let join = planned_settings(&state).and_then(|settings| match settings {
            Some(settings) => settings_plan::applied_join(&settings, state.get("worker_join")),
            None => Err(Diagnostic::error(
                "Could not make worker_join",
                "A cluster-wide setting is still unknown at apply. This is a bug in hct.",
            )),
        });
        match join {
            Ok(join) => set(&mut state, "worker_join", join),
            Err(d) => return failed(request.prior, d),
        }
        Applied {
            new_state: state,
            private: request.private,
            diagnostics: Diagnostics::new(),
        }
    }

    async fn read(
        &self,
        _ctx: &Context,
        state: Value,
        _private: &mut Vec<u8>,
    ) -> (Option<Value>, Diagnostics) {
        (Some(state), Diagnostics::new())
    }

    async fn import(&self, _ctx: &Context, _id: &str) -> Result<Value, Diagnostics> {
        Err(Diagnostic::error(
            "Nothing to import",
            "hct_cluster_secrets has no remote object: to adopt an existing cluster's secrets, \
             set machine_secrets to its talosctl secrets.yaml (e.g. file(\"secrets.yaml\")) and \
             apply; creating it changes nothing on Hetzner or the nodes.",
        )
        .into())
    }
}
