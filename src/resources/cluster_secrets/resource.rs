//! `hct_cluster_secrets`: the schema (the settings of `settings_schema`,
//! the computed `worker_join`), plan (defaults, the changes the settings
//! cannot take, the bundle known once the secrets are) and apply (secrets
//! generated, never at plan: Terraform requires planned values to stay).

use async_trait::async_trait;
use tracing::info;

use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::resources::cluster::model;
use crate::resources::cluster::settings_plan::{self, fill_defaults, settings_known};
use crate::resources::cluster::settings_schema::settings_attributes;
use crate::resources::values::{failed, set};
use crate::talos::Secrets;
use crate::tf::{Attribute, Diagnostic, Diagnostics, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_cluster_secrets";

pub struct ClusterSecretsResource;

fn schema() -> Schema {
    let schema = Schema::new(
        0,
        "A cluster's machine secrets (talosctl's `secrets.yaml`, generated at apply, or adopted) \
         and its cluster-wide settings, bundled as `worker_join`: the one source `hct_cluster` \
         and its `hct_worker_pool`s read (`worker_join = hct_cluster_secrets.<name>.worker_join` \
         in each). Creating it is instant and calls nothing remote, so Terraform can start the \
         pools beside the control plane: their servers are created, attached, booted and \
         configured while the control plane comes up, and join once it can take them. Changing \
         a setting here changes the cluster and every pool (a Talos upgrade still goes control \
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
                    "The settings and the machine secrets for `hct_cluster.worker_join` and \
                     `hct_worker_pool.worker_join` (sensitive). Known at plan time once the \
                     secrets exist.",
                ),
        )
}

/// The bundle of a wholly known planned state; Unknown otherwise.
fn planned_join(planned: &Value) -> Result<Value, Diagnostic> {
    let Value::String(text) = planned.get("machine_secrets") else {
        return Ok(Value::Unknown);
    };
    if !settings_known(planned) {
        return Ok(Value::Unknown);
    }
    let secrets = Secrets::from_yaml(text).map_err(|e| {
        Diagnostic::error("Invalid machine_secrets", e.to_string())
            .at(model::attr("machine_secrets"))
    })?;
    let settings = model::settings(planned, secrets)?;
    Ok(Value::from(settings.worker_join().encode()))
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

    async fn plan(&self, _ctx: &Context, request: PlanRequest) -> Plan {
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
            plan.diagnostics.push(model::user_data_warning());
        }
        let name = plan.planned.get("name").clone();
        set(&mut plan.planned, "id", name);
        match planned_join(&plan.planned) {
            Ok(join) => set(&mut plan.planned, "worker_join", join),
            Err(d) => plan.diagnostics.push(d),
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
        // Known at plan: kept as planned.
        if state.get("worker_join").is_unknown() {
            match planned_join(&state) {
                Ok(join) => set(&mut state, "worker_join", join),
                Err(d) => return failed(request.prior, d),
            }
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
        _private: Vec<u8>,
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
