//! `hct_cluster`: the control plane of a private Talos cluster, from a bare
//! private network to bootstrapped etcd, and back.
//!
//! - `schema`: attributes and their documentation.
//! - `inputs`: checks without API calls, and the settings nodes are made from.
//! - here: plan (immutable inputs, planned node list and config hashes,
//!   preflight), apply (converge the servers, bring up Talos), read (drift),
//!   import, destroy.

mod inputs;
mod schema;

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures_util::future::join_all;
use tracing::info;

use crate::cluster::ClusterError;
use crate::cluster::bring_up;
use crate::cluster::naming;
use crate::cluster::preflight::{Paths, Preflight};
use crate::cluster::provision::{Group, NodeRecord, Recorder};
use crate::cluster::settings::{ClusterSettings, config_sha256};
use crate::cluster::slots;
use crate::cluster::wait::Deadline;
use crate::hcloud::{Client, LabelSelector};
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::resources::common::{
    self, drifted_labels, drifted_server_type, failed, imported_nodes, map_value, nodes_from,
    nodes_value, refresh_nodes, refresh_running_configs, set, string_map,
};
use crate::talos::Secrets;
use crate::talos::client_config;
use crate::talos::release::TalosVersion;
use crate::tf::{Diagnostic, Diagnostics, Schema, Value};
use inputs::{attr, control_plane_attr};

pub const TYPE_NAME: &str = "hct_cluster";

const CREATE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const UPDATE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const DELETE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

pub struct ClusterResource;

#[async_trait]
impl Resource for ClusterResource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema::schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        inputs::validate(config)
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
        let creating = prior.is_null();
        if !creating {
            immutable_changes(prior, &request.proposed, &mut plan);
        }
        fill_defaults(&mut plan.planned, prior);
        let planned = &mut plan.planned;
        set(planned, "id", planned.get("name").clone());

        // The secrets, once known, make every config (and its hash) known.
        let secrets = match planned.get("machine_secrets") {
            Value::String(text) => Secrets::from_yaml(text).ok(),
            _ => None,
        };
        let plan_doc = planned
            .get("network_plan")
            .as_str()
            .and_then(|t| inputs::parse_plan(t).ok());
        let Some(network_plan) = plan_doc else {
            for name in [
                "endpoint",
                "control_plane_nodes",
                "talosconfig",
                "kubeconfig",
                "worker_join",
            ] {
                set(planned, name, Value::Unknown);
            }
            return plan;
        };
        set(
            planned,
            "endpoint",
            Value::from(network_plan.cluster_endpoint()),
        );
        let cluster = planned.get("name").as_str().unwrap_or_default().to_string();
        let slots = slots::of(&cluster, CONTROL_PLANE_GROUP, network_plan.control_plane());
        let settings = match (&secrets, planned.is_wholly_known()) {
            (Some(secrets), true) => inputs::settings(planned, secrets.clone()).ok(),
            _ => None,
        };
        let group = inputs::control_plane_group(planned);
        let prior_nodes = nodes_from(prior.get("control_plane_nodes"));
        let mut new_servers = 0;
        let nodes = slots
            .iter()
            .map(|slot| {
                let sha = match &settings {
                    Some(settings) => {
                        match settings.node_config(&slot.name, group.role, &group.traits) {
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
                    }
                    None => Value::Unknown,
                };
                let server_id = match prior_nodes.iter().find(|n| n.name == slot.name) {
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
        set(planned, "control_plane_nodes", Value::List(nodes));

        // Client configs are issued once; again when what they name changes
        // or their certificate nears its expiry.
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
        let join = settings
            .as_ref()
            .map_or(Value::Unknown, |s| Value::from(s.worker_join().encode()));
        set(planned, "worker_join", join);

        // New servers, or a new server type for the old ones: check what
        // Hetzner offers before anything is touched.
        let new_type = !prior.is_null()
            && prior.get("control_plane").get("server_type")
                != planned.get("control_plane").get("server_type");
        if (new_servers > 0 || new_type)
            && inputs::preflight_inputs_known(planned)
            && let Ok(client) = ctx.hcloud()
        {
            let found = preflight(&client, planned, &network_plan, new_servers).await;
            plan.diagnostics.extend(found);
        }
        plan
    }

    async fn apply(&self, ctx: &Context, request: ApplyRequest) -> Applied {
        if request.planned.is_null() {
            return destroy(ctx, &request.prior).await;
        }
        let operation = if request.prior.is_null() {
            "create"
        } else {
            "update"
        };
        let default = if request.prior.is_null() {
            CREATE_TIMEOUT
        } else {
            UPDATE_TIMEOUT
        };
        let timeout = match common::timeout(&request.config, operation, default) {
            Ok(t) => t,
            Err(d) => return failed(request.prior, d),
        };
        let client = match ctx.hcloud() {
            Ok(c) => c,
            Err(d) => return failed(request.prior, d),
        };
        let proxy = match ctx.talos_proxy().await {
            Ok(p) => p,
            Err(d) => return failed(request.prior, d),
        };
        let secrets = match request.planned.get("machine_secrets").as_str() {
            Some(text) => Secrets::from_yaml(text).map_err(|e| {
                Diagnostic::error("Invalid machine_secrets", e.to_string())
                    .at(attr("machine_secrets"))
            }),
            None => {
                info!("generating the cluster's machine secrets");
                Secrets::generate().map_err(|e| {
                    Diagnostic::error("Could not generate machine secrets", e.to_string())
                })
            }
        };
        let secrets = match secrets {
            Ok(s) => s,
            Err(d) => return failed(request.prior, d),
        };
        let mut state = request.planned.clone();
        set(
            &mut state,
            "machine_secrets",
            Value::from(secrets.to_yaml()),
        );
        let settings = match inputs::settings(&state, secrets) {
            Ok(s) => s,
            Err(d) => return failed(request.prior, d),
        };
        let group = inputs::control_plane_group(&state);
        let slots = slots::of(
            &settings.cluster_name,
            CONTROL_PLANE_GROUP,
            settings.plan.control_plane(),
        );
        let prior_nodes = nodes_from(request.prior.get("control_plane_nodes"));
        let new_servers = slots
            .iter()
            .filter(|s| !prior_nodes.iter().any(|n| n.name == s.name))
            .count();
        if new_servers > 0 {
            let found = preflight(&client, &state, &settings.plan, new_servers).await;
            if found.has_errors() {
                return Applied {
                    new_state: request.prior,
                    private: request.private,
                    diagnostics: found,
                };
            }
        }
        let trust = match settings.api_trust() {
            Ok(t) => t,
            Err(e) => return failed(request.prior, e.to_diagnostic()),
        };
        let recorder = Recorder::new(&settings.cluster_name, CONTROL_PLANE_GROUP, prior_nodes);
        let deadline = Deadline::new(timeout, ctx.cancel.clone());
        let cp = Group {
            settings: &settings,
            spec: &group,
            client: &client,
            proxy,
            trust: &trust,
            deadline: &deadline,
            recorder: &recorder,
        };
        let outcome = async {
            cp.converge(&slots).await?;
            bring_up::control_plane(&cp, &recorder.nodes()).await
        }
        .await;
        let mut diagnostics = Diagnostics::new();
        if let Err(e) = outcome {
            diagnostics.push(e.to_diagnostic());
        }
        // Whatever happened, state gets every server that exists.
        if let Err(d) = finish_state(&mut state, &settings, &recorder.nodes()) {
            diagnostics.push(d);
        }
        if request.prior.is_null() && recorder.nodes().is_empty() && diagnostics.has_errors() {
            // Nothing was created: no state at all.
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
        let cluster = state.get("name").as_str().unwrap_or_default().to_string();
        let network = state.get("network_id").as_i64().unwrap_or_default();
        let servers = match client
            .servers(&naming::group_selector(&cluster, CONTROL_PLANE_GROUP))
            .await
        {
            Ok(s) => s,
            Err(e) => {
                return (
                    Some(state),
                    e.to_diagnostic("reading the control-plane servers").into(),
                );
            }
        };
        if servers.is_empty() {
            info!(
                cluster,
                "no control-plane server exists any more; the cluster is gone"
            );
            return (None, Diagnostics::new());
        }
        let mut state = state;
        let mut diagnostics = Diagnostics::new();
        let mut nodes = refresh_nodes(
            nodes_from(state.get("control_plane_nodes")),
            &servers,
            Some(network),
        );
        let settings = state
            .get("machine_secrets")
            .as_str()
            .ok_or_else(|| "no machine_secrets in state".to_string())
            .and_then(|text| Secrets::from_yaml(text).map_err(|e| e.to_string()))
            .and_then(|secrets| inputs::settings(&state, secrets).map_err(|d| d.summary));
        if let Some(warning) = refresh_running_configs(ctx, &mut nodes, settings).await {
            diagnostics.push(warning);
        }
        set(&mut state, "control_plane_nodes", nodes_value(&nodes));
        // Labels changed on Hetzner show as a diff on server_labels.
        let wanted = string_map(state.get("control_plane").get("server_labels"));
        if let Some(drifted) = drifted_labels(&servers, &wanted)
            && let Value::Map(cp) = &mut set_default_map(&mut state, "control_plane")
        {
            cp.insert("server_labels".into(), map_value(&drifted));
        }
        let wanted = state.get("control_plane").get("server_type").as_str();
        if let Some(drifted) = drifted_server_type(&servers, wanted)
            && let Value::Map(cp) = &mut set_default_map(&mut state, "control_plane")
        {
            cp.insert("server_type".into(), Value::from(drifted));
        }
        (Some(state), diagnostics)
    }

    async fn import(&self, ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        let client = ctx.hcloud().map_err(Diagnostics::from)?;
        let servers = client
            .servers(&naming::group_selector(id, CONTROL_PLANE_GROUP))
            .await
            .map_err(|e| Diagnostics::from(e.to_diagnostic("finding the control-plane servers")))?;
        let Some(first) = servers.first() else {
            return Err(Diagnostic::error(
                "Cluster not found",
                format!(
                    "No server labelled managed-by=hct,cluster={id},pool=cp exists. Import takes \
                     the cluster's name; its servers must carry hct's labels."
                ),
            )
            .into());
        };
        let (network, nodes) = imported_nodes(&servers, id, CONTROL_PLANE_GROUP);
        let image = first.image.as_ref();
        Ok(Value::object([
            ("id", Value::from(id)),
            ("name", Value::from(id)),
            ("network_id", Value::from(network)),
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
            ("control_plane_nodes", nodes_value(&nodes)),
        ]))
    }
}

/// Defaults of optional-computed attributes.
fn fill_defaults(planned: &mut Value, prior: &Value) {
    let default = |name: &str, value: Option<String>, planned: &mut Value| {
        if planned.get(name).is_null() {
            set(planned, name, value.map_or(Value::Unknown, Value::from));
        }
    };
    let talos = planned.get("talos_version").as_str().map(str::to_string);
    default(
        "kubernetes_version",
        talos
            .as_deref()
            .and_then(inputs::default_kubernetes_version),
        planned,
    );
    default("schematic_id", Some(inputs::default_schematic()), planned);
    default(
        "install_disk",
        Some(crate::talos::config::DEFAULT_INSTALL_DISK.into()),
        planned,
    );
    default("config_delivery", Some("user_data".into()), planned);
    default(
        "machine_secrets",
        prior.get("machine_secrets").as_str().map(str::to_string),
        planned,
    );
}

/// Changes hct cannot make in place: replacements, or errors that say what to do.
fn immutable_changes(prior: &Value, proposed: &Value, plan: &mut Plan) {
    let changed = |a: &Value, b: &Value| !b.is_unknown() && a != b;
    for name in ["name", "network_id"] {
        if changed(prior.get(name), proposed.get(name)) {
            plan.requires_replace.push(attr(name));
        }
    }
    // A newer talos_version is an upgrade, node by node; an older one is not.
    let releases = (
        prior
            .get("talos_version")
            .as_str()
            .map(str::parse::<TalosVersion>),
        proposed
            .get("talos_version")
            .as_str()
            .map(str::parse::<TalosVersion>),
    );
    if let (Some(Ok(running)), Some(Ok(wanted))) = releases
        && running > wanted
    {
        plan.diagnostics.push(
            Diagnostic::error(
                "talos_version cannot go back",
                format!(
                    "The nodes run Talos {running}. hct upgrades nodes in place but does not \
                     downgrade them (Talos does not support it for etcd's data). Set talos_version \
                     to {running} or newer, or replace the cluster with `terraform apply -replace`."
                ),
            )
            .at(attr("talos_version")),
        );
    }
    // A new server type is a resize of each server (see `provision`); a new
    // location would be new servers.
    let before = prior.get("control_plane").get("location");
    let after = proposed.get("control_plane").get("location");
    if !before.is_null() && changed(before, after) {
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
    let before = prior.get("machine_secrets");
    let after = proposed.get("machine_secrets");
    if before.is_null() && after.is_null() {
        plan.diagnostics.push(
            Diagnostic::error(
                "machine_secrets needed",
                "This cluster was imported: hct cannot read its secrets from the nodes. Set \
                 machine_secrets to the cluster's talosctl secrets.yaml (e.g. \
                 file(\"secrets.yaml\")).",
            )
            .at(attr("machine_secrets")),
        );
    } else if !before.is_null() && !after.is_null() && changed(before, after) {
        plan.diagnostics.push(
            Diagnostic::error(
                "machine_secrets cannot change",
                "The nodes trust the cluster's CAs and tokens; new secrets would lock hct (and \
                 you) out. Remove machine_secrets from the configuration, or set it back.",
            )
            .at(attr("machine_secrets")),
        );
    }
}

async fn preflight(
    client: &Client,
    value: &Value,
    plan: &crate::network_plan::NetworkPlan,
    new_servers: usize,
) -> Diagnostics {
    let group = inputs::control_plane_group(value);
    // Checked by validate; nothing to compare the image with otherwise.
    let Ok(talos_version) =
        TalosVersion::parse(value.get("talos_version").as_str().unwrap_or_default())
    else {
        return Diagnostics::new();
    };
    Preflight {
        network_id: value.get("network_id").as_i64().unwrap_or_default(),
        plan,
        image_id: value.get("image_id").as_str(),
        talos_version: &talos_version,
        server_type: &group.server_type,
        location: &group.location,
        new_servers,
        paths: Paths {
            network_id: attr("network_id"),
            network_plan: attr("network_plan"),
            image_id: attr("image_id"),
            server_type: control_plane_attr("server_type"),
            location: control_plane_attr("location"),
        },
    }
    .run(client)
    .await
}

/// Fills the computed attributes after apply (also after a failure).
fn finish_state(
    state: &mut Value,
    settings: &ClusterSettings,
    nodes: &[NodeRecord],
) -> Result<(), Diagnostic> {
    set(state, "control_plane_nodes", nodes_value(nodes));
    set(
        state,
        "worker_join",
        Value::from(settings.worker_join().encode()),
    );
    set(
        state,
        "endpoint",
        Value::from(settings.plan.cluster_endpoint()),
    );
    let issue_error = |e: client_config::ClientConfigError| {
        Diagnostic::error("Could not issue client configs", e.to_string())
    };
    if state.get("talosconfig").is_unknown() || state.get("talosconfig").is_null() {
        let talosconfig =
            client_config::talosconfig(&settings.cluster_name, &settings.plan, &settings.secrets)
                .map_err(issue_error)?;
        set(state, "talosconfig", Value::from(talosconfig.into_string()));
    }
    if state.get("kubeconfig").is_unknown() || state.get("kubeconfig").is_null() {
        let kubeconfig = client_config::admin_kubeconfig(
            &settings.cluster_name,
            &settings.plan,
            &settings.secrets,
        )
        .map_err(issue_error)?;
        set(state, "kubeconfig", Value::from(kubeconfig.into_string()));
    }
    Ok(())
}

/// Deletes every server and placement group labelled with the cluster, in
/// any group (pools destroyed earlier, or left behind by a killed run).
async fn destroy(ctx: &Context, prior: &Value) -> Applied {
    let client = match ctx.hcloud() {
        Ok(c) => c,
        Err(d) => return failed(prior.clone(), d),
    };
    let timeout = common::timeout(prior, "delete", DELETE_TIMEOUT).unwrap_or(DELETE_TIMEOUT);
    let deadline = Deadline::new(timeout, ctx.cancel.clone());
    let cluster = prior.get("name").as_str().unwrap_or_default().to_string();
    match delete_everything(&client, &cluster, &deadline).await {
        Ok(()) => Applied::default(),
        Err(e) => {
            // Keep what still exists in state.
            let mut state = prior.clone();
            if let Ok(left) = client
                .servers(&naming::group_selector(&cluster, CONTROL_PLANE_GROUP))
                .await
            {
                let nodes: Vec<NodeRecord> = nodes_from(prior.get("control_plane_nodes"))
                    .into_iter()
                    .filter(|n| left.iter().any(|s| s.id == n.server_id))
                    .collect();
                set(&mut state, "control_plane_nodes", nodes_value(&nodes));
            }
            failed(state, e.to_diagnostic())
        }
    }
}

async fn delete_everything(
    client: &Client,
    cluster: &str,
    deadline: &Deadline,
) -> Result<(), ClusterError> {
    let selector = LabelSelector::new()
        .eq(naming::MANAGED_BY, naming::MANAGED_BY_HCT)
        .eq(naming::CLUSTER, cluster);
    let servers = client
        .servers(&selector)
        .await
        .map_err(ClusterError::hcloud("listing the cluster's servers"))?;
    let deletions = servers.iter().map(|server| async move {
        info!(node = %server.name, id = server.id, "deleting server");
        let doing = format!("deleting server {}", server.name);
        if let Some(action) = client
            .delete_server(server.id)
            .await
            .map_err(ClusterError::hcloud(doing.clone()))?
        {
            client
                .wait_for_actions(vec![action], &doing, deadline.left())
                .await
                .map_err(ClusterError::hcloud(doing))?;
        }
        Ok::<_, ClusterError>(())
    });
    for result in join_all(deletions).await {
        result?;
    }
    let groups = client
        .placement_groups(&selector)
        .await
        .map_err(ClusterError::hcloud(
            "listing the cluster's placement groups",
        ))?;
    for group in groups {
        info!(placement_group = %group.name, "deleting placement group");
        client
            .delete_placement_group(group.id)
            .await
            .map_err(ClusterError::hcloud(format!(
                "deleting placement group {}",
                group.name
            )))?;
    }
    Ok(())
}

/// The object attribute `name`, created empty when missing.
fn set_default_map<'a>(value: &'a mut Value, name: &str) -> &'a mut Value {
    match value {
        Value::Map(items) => items
            .entry(name.to_string())
            .or_insert_with(|| Value::Map(Default::default())),
        other => other,
    }
}
