//! What `hct_cluster` does through the Kubernetes API once its control
//! plane runs: at create, Talos has made the bootstrap manifests' objects
//! and hct applies them once more (server-side apply, field manager `hct`)
//! to take them over; on an update, the manifests that changed are applied
//! and the objects that left them deleted; and when the manifests bring a
//! CNI, the wait until every control plane is Ready.

use super::model;
use crate::cluster::NodeRecord;
use crate::cluster::kube_api::KubeApi;
use crate::cluster::kube_api::manifests::{self, ObjectRef};
use crate::cluster::settings::ClusterSettings;
use crate::provider::Context;
use crate::resources::node_group::Outcome;
use crate::resources::node_group::ready::{self, CniRule};
use crate::resources::values::set;
use crate::tf::{Diagnostic, Value};

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

/// After an apply that left no error: the manifests and the Ready wait. A
/// failure keeps the manifests in state as they were, so the next plan
/// shows them as changes again.
pub async fn finish(
    ctx: &Context,
    prior: &Value,
    state: &mut Value,
    settings: &ClusterSettings,
    outcome: &mut Outcome,
) {
    if outcome.diagnostics.has_errors() {
        keep_prior(prior, state);
        return;
    }
    if let Err(diagnostic) = converge(ctx, prior, state, settings, &outcome.nodes).await {
        keep_prior(prior, state);
        outcome.diagnostics.push(diagnostic);
    }
}

fn keep_prior(prior: &Value, state: &mut Value) {
    if !prior.is_null() {
        for name in ["bootstrap_manifests", "bootstrap_manifest_objects"] {
            set(state, name, prior.get(name).clone());
        }
    }
}

/// Brings the cluster's objects in line with the manifests and waits for
/// Ready nodes when a CNI is among them.
async fn converge(
    ctx: &Context,
    prior: &Value,
    state: &Value,
    settings: &ClusterSettings,
    nodes: &[NodeRecord],
) -> Result<(), Diagnostic> {
    let Some(first) = nodes.first() else {
        return Ok(());
    };
    let (proxy, credentials) = ready::api_access(ctx, settings).await?;
    let api = KubeApi {
        ip: first.ip.into(),
        proxy,
        credentials: &credentials,
    };
    let after = model::bootstrap_manifests(state);
    if prior.is_null() && !after.is_empty() {
        // Talos created the objects at bootstrap; hct applies them too and
        // takes them over, so later changes (removed fields too) land.
        manifests::sync(&api, &after, &[], true)
            .await
            .map_err(|why| sync_failed(&why))?;
    }
    if !prior.is_null() {
        let before = model::bootstrap_manifests(prior);
        let changed: Vec<(String, String)> = after
            .iter()
            .filter(|m| !before.contains(m))
            .cloned()
            .collect();
        let kept: Vec<ObjectRef> = after
            .iter()
            .flat_map(|(_, contents)| manifests::refs(contents).unwrap_or_default())
            .collect();
        let stale: Vec<ObjectRef> = recorded(prior)
            .into_iter()
            .filter(|o| !kept.iter().any(|k| k.same_object(o)))
            .collect();
        if !changed.is_empty() || !stale.is_empty() {
            manifests::sync(&api, &changed, &stale, false)
                .await
                .map_err(|why| sync_failed(&why))?;
        }
    }
    let rule = CniRule::Known(model::brings_cni(&after));
    ready::wait_ready(ctx, prior, state, settings, nodes, rule).await
}

fn sync_failed(why: &str) -> Diagnostic {
    Diagnostic::error(
        "Could not apply the bootstrap manifests",
        format!(
            "{why}. The control plane runs; apply again to retry (the manifests stay planned as \
             changes)."
        ),
    )
    .at(model::attr("bootstrap_manifests"))
}
