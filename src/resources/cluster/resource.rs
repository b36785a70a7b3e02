//! `resource "hct_cluster"`: plan, apply, read and import of the control
//! plane, over the node-group lifecycle it shares with the pools
//! (`resources::node_group`); what is its own: defaults, the changes it
//! cannot make in place, the machine secrets, the client configs and
//! `worker_join`, and destroying the whole cluster.

use std::time::SystemTime;

use async_trait::async_trait;
use tracing::info;

use super::credentials;
use super::etcd_backup;
use super::kubernetes;
use super::load_balancer;
use super::model::{self, attr, control_plane_attr};
use super::replacement;
use super::schema;
use super::settings_plan;
use super::settings_schema::SETTINGS;
use super::{NODES, addons::approval_warning};
use crate::cluster::apply::Outcome;
use crate::cluster::bootstrap::EtcdRecord;
use crate::cluster::preflight::{self, Target};
use crate::cluster::settings::{ClusterSettings, ConfigDelivery};
use crate::cluster::{naming, slots};
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::provider::{Applied, Context, Plan};
use crate::resources::node_group::{
    self, GroupKind, NodeGroupResource, Prepared, Refreshed, StateGroup, nodes_from, nodes_value,
};
use crate::resources::values::{map_value, object_mut, set, string_map};
use crate::talos::Role;
use crate::talos::Secrets;
use crate::talos::client_config;
use crate::talos::release::TalosVersion;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Schema, Value};

pub const TYPE_NAME: &str = "hct_cluster";

/// What the control plane's configs are made of besides the cluster-wide
/// settings (`settings_schema::SETTINGS`) and the secrets.
const CONFIG_INPUTS: &[&str] = &[
    "config_patches",
    "bootstrap_manifests",
    "control_plane",
    "kubelet_serving_cert_approval",
];

/// Secrets to check configs with at plan time, before the cluster's own
/// are made (made once per provider process, without RSA; never stored or
/// sent).
fn checking_secrets() -> Option<Secrets> {
    static SECRETS: std::sync::OnceLock<Option<Secrets>> = std::sync::OnceLock::new();
    SECRETS.get_or_init(|| Secrets::for_checking().ok()).clone()
}

/// The control plane as a node group.
pub struct Cluster;

pub type ClusterResource = NodeGroupResource<Cluster>;

#[async_trait]
impl GroupKind for Cluster {
    const TYPE_NAME: &'static str = TYPE_NAME;
    const NODES: &'static str = NODES;
    const SERVERS: &'static str = "the control-plane servers";
    const PLACEMENT_GROUP_IDS: bool = false;
    const ROLE: Role = Role::ControlPlane;

    const SCHEMA: fn() -> Schema = schema::schema;
    const VALIDATE: fn(&Value) -> Diagnostics = model::validate;
    async fn plan(ctx: &Context, prior: &Value, config: &Value, plan: &mut Plan) {
        let parallel = model::parallel_form(config);
        if parallel {
            if let Err(d) = settings_plan::copy_from_join(&mut plan.planned, config, prior) {
                plan.diagnostics.push(d);
                return;
            }
        } else {
            // Optional in the serial form: unset means none.
            let keys = config.get("ssh_key_ids").clone();
            set(&mut plan.planned, "ssh_key_ids", keys);
        }
        if !prior.is_null() {
            let proposed = plan.planned.clone();
            let source = parallel.then(|| attr("worker_join"));
            immutable_changes(prior, &proposed, source.as_ref(), plan);
        }
        settings_plan::fill_defaults(&mut plan.planned, prior);
        // hct_cluster_secrets warns in the parallel form, but cannot see the
        // manifests that would sit in user data too.
        let manifests = !model::bootstrap_manifests(&plan.planned).is_empty();
        if (!parallel || manifests)
            && plan.planned.get("config_delivery").as_str()
                == Some(ConfigDelivery::UserData.as_str())
        {
            plan.diagnostics
                .push(model::user_data_warning(&plan.planned));
        }
        let planned = &mut plan.planned;
        set(planned, "id", planned.get("name").clone());
        set(
            planned,
            "bootstrap_manifest_objects",
            model::manifest_objects(planned),
        );
        // Planned true and null: a failed apply, or objects a refresh found
        // edited by hand, is a change.
        set(planned, kubernetes::SYNCED, Value::from(true));
        set(planned, kubernetes::DRIFT, Value::Null);

        let Some(network_plan) = planned
            .get("network_plan")
            .as_str()
            .and_then(|t| model::parse_plan(t).ok())
        else {
            for name in [
                "endpoint",
                load_balancer::ATTRIBUTE,
                NODES,
                "talosconfig",
                "kubeconfig",
                credentials::ATTRIBUTE,
            ] {
                set(planned, name, Value::Unknown);
            }
            etcd_backup::plan(prior, planned, &ctx.cancel, &mut plan.diagnostics).await;
            if !parallel {
                set(planned, "worker_join", Value::Unknown);
            }
            return;
        };
        set(
            planned,
            "endpoint",
            Value::from(network_plan.cluster_endpoint()),
        );
        // The secrets, once known, make every config (and its hash) known.
        let settings = match planned.get("machine_secrets") {
            Value::String(text) if planned.is_wholly_known() => Secrets::from_yaml(text)
                .ok()
                .and_then(|secrets| model::settings(planned, secrets).ok()),
            _ => None,
        };
        let cluster = planned.get("name").as_str().unwrap_or_default().to_string();
        plan.diagnostics
            .extend(approval_warning(planned, &network_plan));
        let slots = slots::of(&cluster, CONTROL_PLANE_GROUP, network_plan.control_plane());
        let spec = model::control_plane_group(planned);
        // Secrets made at apply: check the configs (their patches) with
        // stand-in secrets now, so a config no node can run fails the plan.
        if settings.is_none()
            && planned.get("machine_secrets").is_unknown()
            && SETTINGS
                .iter()
                .filter(|name| **name != "machine_secrets")
                .chain(CONFIG_INPUTS)
                .all(|name| planned.get(name).is_wholly_known())
            && let Some(secrets) = checking_secrets()
            && let Ok(stand_in) = model::settings(planned, secrets)
        {
            node_group::plan_nodes(
                &slots,
                &[],
                Some((&stand_in, &spec)),
                &attr("config_patches"),
                &mut plan.diagnostics,
            );
        }
        let recorded = nodes_from(prior.get(NODES));
        // Only after a finished apply was every slot an etcd member.
        let members = prior
            .get("network_plan")
            .as_str()
            .filter(|_| prior.get(kubernetes::SYNCED).as_bool() == Some(true))
            .and_then(|t| model::parse_plan(t).ok())
            .map(|p| slots::of(&cluster, CONTROL_PLANE_GROUP, p.control_plane()));
        if let Some(members) = members
            && let Some(d) = replacement::check(
                &members,
                &recorded,
                network_plan.control_plane().nodes,
                &attr("control_plane"),
            )
        {
            plan.diagnostics.push(d);
        }
        let (nodes, new_servers) = node_group::plan_nodes(
            &slots,
            &recorded,
            settings.as_ref().map(|s| (s, &spec)),
            &attr("config_patches"),
            &mut plan.diagnostics,
        );
        set(planned, NODES, nodes);
        etcd_backup::plan(prior, planned, &ctx.cancel, &mut plan.diagnostics).await;
        plan_client_configs(prior, planned);
        // After the settings: an unknown id would make them unknown.
        load_balancer::plan(&network_plan, prior, planned);
        // The parallel form's bundle is the configuration's.
        if !parallel {
            let join = settings.as_ref().map_or(Ok(Value::Unknown), |s| {
                settings_plan::planned_join(s, prior.get("worker_join"))
            });
            match join {
                Ok(join) => set(planned, "worker_join", join),
                Err(d) => plan.diagnostics.push(d),
            }
        }

        // New servers, or a new server type for the old ones: check what
        // Hetzner offers before anything is touched.
        let new_type = !prior.is_null()
            && prior.get("control_plane").get("server_type")
                != planned.get("control_plane").get("server_type");
        if (new_servers > 0 || new_type)
            && model::preflight_inputs_known(planned)
            && let Ok(talos_version) = TalosVersion::parse(model::text(planned, "talos_version"))
            && let Ok(client) = ctx.hcloud()
        {
            let target = Target {
                network_id: planned.get("network_id").as_i64().unwrap_or_default(),
                plan: &network_plan,
                image_id: planned.get("image_id").as_str(),
                talos_version: &talos_version,
            };
            let found =
                preflight::group(&client, &target, &spec, new_servers, &model::paths()).await;
            plan.diagnostics.extend(found);
        }
        // New servers: none of this cluster's name may exist that state
        // does not know, unless hct can prove they are its own leftovers.
        if new_servers > 0
            && let Some(network) = planned.get("network_id").as_i64()
        {
            let found = node_group::strangers(
                ctx,
                &cluster,
                Some(CONTROL_PLANE_GROUP),
                network,
                &recorded,
                settings.as_ref().map(|s| &s.keys),
            )
            .await;
            plan.diagnostics.extend(found);
        }
    }

    fn prepare(state: &mut Value) -> Result<Prepared, Diagnostic> {
        let secrets = match state.get("machine_secrets").as_str() {
            Some(text) => Secrets::from_yaml(text).map_err(|e| {
                Diagnostic::error("Invalid machine_secrets", e.to_string())
                    .at(attr("machine_secrets"))
            })?,
            None => {
                info!("generating the cluster's machine secrets");
                let secrets = Secrets::generate().map_err(|e| {
                    Diagnostic::error("Could not generate machine secrets", e.to_string())
                })?;
                set(state, "machine_secrets", Value::from(secrets.to_yaml()));
                secrets
            }
        };
        let settings = model::settings(state, secrets)?;
        let slots = slots::of(
            &settings.cluster_name,
            CONTROL_PLANE_GROUP,
            settings.plan.control_plane(),
        );
        let mut spec = model::control_plane_group(state);
        spec.snapshots = etcd_backup::rule(state)?;
        spec.restore_from = etcd_backup::restore_for_apply(state)?;
        Ok(Prepared {
            spec,
            settings,
            slots,
            paths: model::paths(),
        })
    }

    async fn finish(
        ctx: &Context,
        prior: &Value,
        state: &mut Value,
        prepared: &Prepared,
        outcome: &mut Outcome,
    ) {
        if let Err(d) = finish_state(state, &prepared.settings) {
            outcome.diagnostics.push(d);
        }
        load_balancer::record(state, outcome.api_load_balancer_id);
        let mut found = Diagnostics::new();
        etcd_backup::record(prior, state, &outcome.snapshots, &mut found);
        outcome.diagnostics.extend(found);
        kubernetes::finish(ctx, prior, state, &prepared.settings, outcome).await;
    }

    async fn destroy(ctx: &Context, prior: Value) -> Applied {
        super::destroy::destroy(ctx, &prior).await
    }

    fn state_group(state: &Value) -> Option<StateGroup> {
        let settings = model::state_settings(state);
        Some(StateGroup {
            cluster: model::text(state, "name").to_string(),
            group: CONTROL_PLANE_GROUP.to_string(),
            network: state.get("network_id").as_i64(),
            server_labels: string_map(state.get("control_plane").get("server_labels")),
            server_type: state
                .get("control_plane")
                .get("server_type")
                .as_str()
                .map(str::to_string),
            settings,
        })
    }

    fn drifted(mut state: Value, refreshed: &Refreshed, etcd: EtcdRecord) -> Option<Value> {
        let load_balancer_left =
            load_balancer::refreshed(&mut state, refreshed.api_load_balancer.as_ref());
        if refreshed.servers.is_empty() && etcd == EtcdRecord::Bootstrapped {
            // Every control plane is gone, and etcd with them: kept in
            // state (with its record of the bootstrap), so the apply stops
            // instead of bootstrapping an empty cluster under the old name.
            info!(
                cluster = model::text(&state, "name"),
                "no control-plane server exists any more, and etcd was bootstrapped"
            );
            set(&mut state, kubernetes::SYNCED, Value::from(false));
        } else if refreshed.servers.is_empty() {
            if !load_balancer_left {
                info!(
                    cluster = model::text(&state, "name"),
                    "no control-plane server exists any more; the cluster is gone"
                );
                return None;
            }
            // Kept for its load balancer, which destroy deletes; an apply
            // builds the cluster on it again (no etcd is left to keep).
            info!(
                cluster = model::text(&state, "name"),
                "no control-plane server exists; the cluster's load balancer does"
            );
            set(&mut state, kubernetes::SYNCED, Value::from(false));
        }
        // Labels and types changed on Hetzner show as a diff, so apply puts
        // them back.
        let drift = [
            (
                "server_labels",
                refreshed.drifted_labels.as_ref().map(map_value),
            ),
            (
                "server_type",
                refreshed.drifted_server_type.clone().map(Value::from),
            ),
        ];
        for (name, value) in drift {
            if let Some(value) = value
                && let Value::Map(cp) = object_mut(&mut state, "control_plane")
            {
                cp.insert(name.into(), value);
            }
        }
        credentials::fill(&mut state);
        Some(state)
    }

    async fn drifted_beyond(
        ctx: &Context,
        state: &mut Value,
        refreshed: &Refreshed,
        settings: &ClusterSettings,
    ) -> Diagnostics {
        let warning = kubernetes::refresh(ctx, state, settings, &refreshed.nodes).await;
        warning.into_iter().collect()
    }

    async fn import(ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        let imported = node_group::import(ctx, id, CONTROL_PLANE_GROUP, Self::SERVERS, || {
            Diagnostic::error(
                "Cluster not found",
                format!(
                    "No server labelled managed-by=hct,cluster={id},pool=cp exists. Import takes \
                     the cluster's name; its servers must carry hct's labels."
                ),
            )
        })
        .await?;
        let first = imported.first();
        let image = first.image.as_ref();
        Ok(Value::object([
            ("id", Value::from(id)),
            ("name", Value::from(id)),
            ("network_id", Value::from(imported.network)),
            (
                "talos_version",
                Value::from(image.and_then(|i| i.labels.get("version").cloned())),
            ),
            ("image_id", Value::from(image.map(|i| i.id.to_string()))),
            (
                "control_plane",
                Value::object([
                    ("server_type", Value::from(first.server_type.name.as_str())),
                    (
                        "location",
                        Value::from(first.location.as_ref().map(|l| l.name.clone())),
                    ),
                    (
                        "server_labels",
                        map_value(&naming::user_labels(&first.labels)),
                    ),
                ]),
            ),
            (NODES, nodes_value(&imported.nodes)),
        ]))
    }
}

/// Client configs are issued once; again when what they name changes or
/// their certificate nears its expiry.
fn plan_client_configs(prior: &Value, planned: &mut Value) {
    let endpoints_changed = prior.get("endpoint") != planned.get("endpoint")
        || prior.get("name") != planned.get("name")
        || prior.get("machine_secrets") != planned.get("machine_secrets");
    for name in ["talosconfig", "kubeconfig"] {
        let expiring = prior
            .get(name)
            .as_str()
            .is_some_and(|text| client_config::due_for_renewal(text, SystemTime::now()));
        if expiring {
            info!("the {name}'s client certificate expires within 30 days; it is issued again");
        }
        let value = if endpoints_changed || expiring || prior.get(name).is_null() {
            Value::Unknown
        } else {
            prior.get(name).clone()
        };
        set(planned, name, value);
    }
    credentials::fill(planned);
}

/// Changes hct cannot make in place: replacements, or errors that say what
/// to do. `source`: where the settings come from in the parallel form.
fn immutable_changes(prior: &Value, proposed: &Value, source: Option<&AttrPath>, plan: &mut Plan) {
    settings_plan::settings_changes(prior, proposed, source, plan);
    // A new server type is a resize of each server (`cluster::resize`); a new
    // location would be new servers.
    let before = prior.get("control_plane").get("location");
    let after = proposed.get("control_plane").get("location");
    if !before.is_null() && !after.is_unknown() && before != after {
        plan.diagnostics.push(
            Diagnostic::error(
                "control_plane.location cannot change in place",
                format!(
                    "Servers cannot move: changing location from {} to {} needs new servers, \
                     which hct does not do in place. Keep the old value, or replace the cluster \
                     with `terraform apply -replace`.",
                    before.to_json(),
                    after.to_json()
                ),
            )
            .at(control_plane_attr("location")),
        );
    }
}

/// Fills the computed attributes after apply (also after a failure).
fn finish_state(state: &mut Value, settings: &ClusterSettings) -> Result<(), Diagnostic> {
    // The parallel form's bundle is the configuration's, kept as it is.
    if !matches!(state.get("worker_join"), Value::String(_)) {
        let join = settings_plan::applied_join(settings, state.get("worker_join"))?;
        set(state, "worker_join", join);
    }
    set(
        state,
        "endpoint",
        Value::from(settings.plan.cluster_endpoint()),
    );
    let issue_error = |e: client_config::ClientConfigError| {
        Diagnostic::error("Could not issue client configs", e.to_string())
    };
    let secrets = settings.cluster_secrets().map_err(|e| e.to_diagnostic())?;
    if state.get("talosconfig").is_unknown() || state.get("talosconfig").is_null() {
        let talosconfig =
            client_config::talosconfig(&settings.cluster_name, &settings.plan, secrets)
                .map_err(issue_error)?;
        set(state, "talosconfig", Value::from(talosconfig.into_string()));
    }
    if state.get("kubeconfig").is_unknown() || state.get("kubeconfig").is_null() {
        let kubeconfig =
            client_config::admin_kubeconfig(&settings.cluster_name, &settings.plan, secrets)
                .map_err(issue_error)?;
        set(state, "kubeconfig", Value::from(kubeconfig.into_string()));
    }
    credentials::fill(state);
    Ok(())
}
