//! What `hct_cluster` does through the Kubernetes API once its control
//! plane runs, in Terraform's terms: the manifests before and after, hct's
//! add-ons switched on and off (the CSR approver, the `hcloud` Secret and
//! its token), handed to the runbook's `cluster::kubernetes_sync`, which
//! applies them (taking over what Talos made at bootstrap), deletes what
//! left them, re-applies Talos' own manifests after an upgrade, and waits
//! for Ready control planes once a CNI runs.
//!
//! `kubernetes_synced` records whether that all went through: after a
//! failure (at create too) it is false, the plan says true, so the next
//! apply applies every manifest again. A refresh that finds hct's objects
//! edited or deleted by hand records them in `kubernetes_drift`
//! ([`refresh`]), planned null, so the next apply applies the manifests
//! again.

use super::addons::{self as switches, Addons};
use super::model;
use crate::cluster::NodeRecord;
use crate::cluster::addons;
use crate::cluster::apply::Outcome;
use crate::cluster::kube_api::manifests::{self, ObjectRef};
use crate::cluster::kubernetes_sync::{self, Objects, Sync};
use crate::cluster::settings::ClusterSettings;
use crate::cluster::wait::Deadline;
use crate::provider::Context;
use crate::resources::values::set;
use crate::tf::{Diagnostic, Value};

/// The state attribute saying the last apply's Kubernetes work went through.
pub const SYNCED: &str = "kubernetes_synced";

/// The state attribute listing hct's objects a refresh found edited by hand.
pub const DRIFT: &str = "kubernetes_drift";

/// The name the `hcloud` Secret goes by among the manifests hct applies.
const SECRET_MANIFEST: &str = "hct-hcloud-secret";

/// The objects state records for the manifests.
fn recorded(state: &Value) -> Vec<ObjectRef> {
    match state.get("bootstrap_manifest_objects") {
        Value::Map(map) => map
            .values()
            .flat_map(|list| list.as_list().unwrap_or_default().to_vec())
            .filter_map(|v| v.as_str().and_then(ObjectRef::parse))
            .collect(),
        _ => Vec::new(),
    }
}

/// After an apply: the manifests, hct's add-ons and the Ready wait, unless
/// the nodes' apply failed. A failure keeps the manifests in state as they
/// were and records `kubernetes_synced = false`, so the next plan shows a
/// change and its apply applies them again.
pub async fn finish(
    ctx: &Context,
    prior: &Value,
    state: &mut Value,
    settings: &ClusterSettings,
    outcome: &mut Outcome,
) {
    let synced = !outcome.diagnostics.has_errors()
        && match converge(
            ctx,
            prior,
            state,
            settings,
            &outcome.nodes,
            &outcome.deadline,
        )
        .await
        {
            Ok(()) => true,
            Err(diagnostic) => {
                outcome.diagnostics.push(diagnostic);
                false
            }
        };
    if !synced {
        keep_prior(prior, state);
    }
    set(state, SYNCED, Value::from(synced));
}

fn keep_prior(prior: &Value, state: &mut Value) {
    if !prior.is_null() {
        // The add-on switches too: one switched off in a failed apply is
        // still on in state, so the next apply deletes its objects.
        for name in [
            "bootstrap_manifests",
            "bootstrap_manifest_objects",
            DRIFT,
            "kubelet_serving_cert_approval",
            "hcloud_secret",
            "ccm_token",
            super::schema::CCM_TOKEN_WO_VERSION,
        ] {
            set(state, name, prior.get(name).clone());
        }
    }
}

/// What to apply and delete, besides the user's manifests: hct's add-ons.
struct Own {
    apply: Vec<(String, String)>,
    delete: Vec<ObjectRef>,
}

fn own_objects(
    ctx: &Context,
    prior: &Value,
    state: &Value,
    settings: &ClusterSettings,
) -> Result<Own, Diagnostic> {
    let now = switches::addons(state);
    let before = (!prior.is_null()).then(|| switches::addons(prior));
    let was_on = |on: fn(&Addons) -> bool| before.as_ref().is_some_and(on);
    let mut own = Own {
        apply: Vec::new(),
        delete: Vec::new(),
    };
    if let Some(approver) = model::approver_manifest(state) {
        if now.csr_approval {
            own.apply.push(approver);
        } else if was_on(|a| a.csr_approval) {
            own.delete
                .extend(manifests::refs(&approver.1).unwrap_or_default());
        }
    }
    let secret = |token: &str| addons::hcloud_secret(token, settings.network_id);
    if now.hcloud_secret {
        let token = match &now.ccm_token {
            Some(token) => token.clone(),
            None => ctx
                .require_config()?
                .hcloud_token
                .as_ref()
                .map(|t| t.expose().to_string())
                .ok_or_else(|| {
                    Diagnostic::error(
                        "No token for the hcloud Secret",
                        "hcloud_secret is on, but neither ccm_token nor the provider's \
                         hcloud_token is set. Set ccm_token (a token of its own is best), or \
                         hcloud_secret = false.",
                    )
                    .at(model::attr("ccm_token"))
                })?,
        };
        own.apply
            .push((SECRET_MANIFEST.to_string(), secret(&token).to_string()));
    } else if was_on(|a| a.hcloud_secret) {
        own.delete
            .extend(manifests::refs(&secret("").to_string()).unwrap_or_default());
    }
    Ok(own)
}

/// Brings the cluster's objects in line (`cluster::kubernetes_sync`).
async fn converge(
    ctx: &Context,
    prior: &Value,
    state: &Value,
    settings: &ClusterSettings,
    nodes: &[NodeRecord],
    deadline: &Deadline,
) -> Result<(), Diagnostic> {
    if nodes.is_empty() {
        return Ok(());
    }
    let own = own_objects(ctx, prior, state, settings)?;
    let after = model::bootstrap_manifests(state);
    let own_names: Vec<String> = after
        .iter()
        .map(|(name, _)| name.clone())
        .chain([addons::APPROVER_MANIFEST.to_string()])
        .collect();
    let objects = Objects {
        before: (!prior.is_null()).then(|| model::bootstrap_manifests(prior)),
        brings_cni: brings_cni(&after),
        after,
        recorded: recorded(prior),
        addons: own.apply,
        addons_off: own.delete,
        own_names,
    };
    kubernetes_sync::sync(Sync {
        settings,
        proxy: ctx.talos_proxy().await?,
        nodes,
        deadline,
        objects,
        release_moved: !prior.is_null() && release_moved(prior, state),
        unfinished: prior.get(SYNCED).as_bool() != Some(true),
        drifted: prior.get(DRIFT).as_list().is_some_and(|l| !l.is_empty()),
    })
    .await
    .map_err(|e| e.to_diagnostic())
}

/// Whether the apply moved the cluster to another Talos or Kubernetes
/// release.
fn release_moved(prior: &Value, state: &Value) -> bool {
    ["talos_version", "kubernetes_version"]
        .iter()
        .any(|name| prior.get(name) != state.get(name))
}

/// For a refresh: objects of the bootstrap manifests or hct's CSR approver
/// edited or deleted by hand since the last apply
/// (`kubernetes_sync::drift`) go into `kubernetes_drift`, which the plan
/// wants null: its apply applies the manifests again, and a warning names
/// them. The `hcloud` Secret is left out: its token may be write-only, so
/// state cannot say what it should be. When the API server cannot be asked
/// (in time), state stays as it is and the log says why.
pub async fn refresh(
    ctx: &Context,
    state: &mut Value,
    settings: &ClusterSettings,
    nodes: &[NodeRecord],
) -> Option<Diagnostic> {
    // After a failed apply the next one applies everything anyway.
    if state.get(SYNCED).as_bool() != Some(true) || nodes.is_empty() {
        return None;
    }
    let applied = model::inline_manifests(state);
    if applied.is_empty() {
        return None;
    }
    let proxy = match ctx.talos_proxy().await {
        Ok(proxy) => proxy,
        Err(why) => {
            tracing::warn!(
                "not checking the manifests' objects for edits: {}",
                why.summary
            );
            return None;
        }
    };
    let asked = kubernetes_sync::drift(settings, proxy, nodes, &applied, &ctx.cancel);
    let drift = match asked.await {
        Ok(drift) => drift,
        Err(why) => {
            tracing::warn!("not checking the manifests' objects for edits: {why}");
            return None;
        }
    };
    let lines: Vec<String> = drift.iter().map(ToString::to_string).collect();
    let recorded = if lines.is_empty() {
        Value::Null
    } else {
        Value::List(lines.iter().cloned().map(Value::from).collect())
    };
    set(state, DRIFT, recorded);
    if lines.is_empty() {
        return None;
    }
    Some(
        Diagnostic::warning(
            "Objects of the bootstrap manifests changed outside Terraform",
            format!(
                "These objects in the cluster are not as hct applied them:\n- {}\nThe next \
                 apply applies the manifests again (server-side apply, field manager hct, \
                 forced) and so takes these changes back. To keep a change, make it in the \
                 manifest.",
                lines.join("\n- ")
            ),
        )
        .at(model::attr(DRIFT)),
    )
}

/// Whether the manifests bring a CNI: a DaemonSet the rule of
/// `kube_api::nodes::is_cni_daemonset` counts as one.
fn brings_cni(manifests: &[(String, String)]) -> bool {
    manifests.iter().any(|(_, contents)| {
        manifests::objects(contents)
            .unwrap_or_default()
            .iter()
            .any(crate::cluster::kube_api::nodes::is_cni_daemonset)
    })
}
