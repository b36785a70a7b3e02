//! The runbook's entry for what `hct_cluster` does through the Kubernetes
//! API once its control plane runs. After an upgrade (or an apply that did
//! not finish) the manifests Talos renders follow the release first
//! (`talos_manifests`, as `talosctl upgrade-k8s` ends); then the bootstrap
//! manifests that changed, hct's add-ons, and the deletion of objects that
//! left them (`kube_api::manifests`, server-side apply, field manager
//! `hct`); at create, after a failure or a release move every manifest is
//! applied in full, taking Talos' objects over. Last, the wait until every
//! control plane is Ready, when the manifests bring a CNI (`ready`).
//!
//! A refresh asks which of hct's objects were changed by hand since
//! ([`drift`]), so that the plan can take them back.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::net::Proxy;
use crate::talos::client_config::ApiCredentials;

use super::kube_api::KubeApi;
use super::kube_api::drift::{self, Drift};
use super::kube_api::manifests::{self, ObjectRef};
use super::ready::{self, CniRule};
use super::record::NodeRecord;
use super::settings::ClusterSettings;
use super::wait::Deadline;
use super::{ClusterError, talos_manifests};

/// A manifest: its name and its YAML.
pub type Manifest = (String, String);

/// What the cluster's objects should be, and were.
pub struct Objects {
    /// The bootstrap manifests of the last finished apply (None at create).
    pub before: Option<Vec<Manifest>>,
    /// The bootstrap manifests now.
    pub after: Vec<Manifest>,
    /// The objects state records for the manifests before.
    pub recorded: Vec<ObjectRef>,
    /// hct's add-ons (approver, `hcloud` Secret) switched on, applied in
    /// full every time, and the objects of those switched off.
    pub addons: Vec<Manifest>,
    pub addons_off: Vec<ObjectRef>,
    /// The names of hct's own manifests (bootstrap manifests and add-ons),
    /// which Talos' rendered ones must not overwrite.
    pub own_names: Vec<String>,
    /// Whether the manifests bring a CNI (so nodes can turn Ready).
    pub brings_cni: bool,
}

/// One sync: the control plane's nodes, and why it is full.
pub struct Sync<'a> {
    pub settings: &'a ClusterSettings,
    pub proxy: Option<Proxy>,
    pub nodes: &'a [NodeRecord],
    pub deadline: &'a Deadline,
    pub objects: Objects,
    /// The apply moved the cluster to another Talos or Kubernetes release.
    pub release_moved: bool,
    /// The last apply's Kubernetes work did not go through (or this is
    /// the first).
    pub unfinished: bool,
    /// A refresh found objects of the manifests edited by hand: every
    /// manifest is applied again (without taking Talos' objects over).
    pub drifted: bool,
}

/// Brings the cluster's objects in line with the manifests and hct's
/// add-ons, and waits for Ready control planes when a CNI is among them.
pub async fn sync(run: Sync<'_>) -> Result<(), ClusterError> {
    let Some(first) = run.nodes.first() else {
        return Ok(());
    };
    let credentials = run.settings.kubernetes_trust()?;
    let api = api_of(first, run.proxy, &credentials);
    let objects = run.objects;
    let created = objects.before.is_none();
    let full = run.release_moved || run.unfinished;
    // First, so that hct's own manifests, applied in full after them, win
    // where they touch the same objects.
    if !created && full {
        let trust = run.settings.api_trust()?;
        talos_manifests::sync(
            run.nodes,
            &trust,
            run.proxy,
            &api,
            &objects.own_names,
            run.deadline,
        )
        .await?;
    }
    let mut apply: Vec<Manifest> = match &objects.before {
        Some(before) if !full && !run.drifted => objects
            .after
            .iter()
            .filter(|m| !before.contains(m))
            .cloned()
            .collect(),
        _ => objects.after.clone(),
    };
    let kept: Vec<ObjectRef> = objects
        .after
        .iter()
        .flat_map(|(_, contents)| manifests::refs(contents).unwrap_or_default())
        .collect();
    let mut stale: Vec<ObjectRef> = objects
        .recorded
        .into_iter()
        .filter(|o| !kept.iter().any(|k| k.same_object(o)))
        .collect();
    apply.extend(objects.addons);
    stale.extend(objects.addons_off);
    if !apply.is_empty() || !stale.is_empty() {
        manifests::sync(&api, &apply, &stale, full, run.deadline)
            .await
            .map_err(|why| ClusterError::ManifestsNotApplied { why })?;
    }
    super::this_run::manifests_applied(run.settings, objects.brings_cni);
    let rule = CniRule::Known(objects.brings_cni);
    ready::wait_ready(
        run.settings,
        &credentials,
        run.proxy,
        run.nodes,
        rule,
        run.deadline,
    )
    .await
}

/// The API server of control plane `node`.
fn api_of<'a>(
    node: &NodeRecord,
    proxy: Option<Proxy>,
    credentials: &'a ApiCredentials,
) -> KubeApi<'a> {
    KubeApi {
        ip: node.ip.into(),
        proxy,
        credentials,
    }
}

/// How long a refresh asks about drift at most: a plan must not hang on
/// an API server that answers slowly.
const DRIFT_LIMIT: Duration = Duration::from_secs(30);

/// For a refresh: the objects of `manifests` the cluster holds otherwise
/// than an apply of them would make (edited or deleted by hand), asked of
/// the control planes `nodes` in turn until one answers, within
/// [`DRIFT_LIMIT`] or until Terraform asks to stop.
pub async fn drift(
    settings: &ClusterSettings,
    proxy: Option<Proxy>,
    nodes: &[NodeRecord],
    manifests: &[Manifest],
    cancel: &CancellationToken,
) -> Result<Vec<Drift>, ClusterError> {
    let credentials = settings.kubernetes_trust()?;
    let ask = async {
        let mut why = Vec::new();
        for node in nodes {
            match drift::drifted(&api_of(node, proxy, &credentials), manifests).await {
                Ok(drift) => return Ok(drift),
                Err(e) => why.push(format!("{}: {e}", node.name)),
            }
        }
        Err(why.join("; "))
    };
    let refused = |reason: String| ClusterError::Kubernetes {
        node: "the control planes' API servers".into(),
        reason,
    };
    tokio::select! {
        asked = tokio::time::timeout(DRIFT_LIMIT, ask) => {
            asked.map_err(|_| refused(format!("no answer within {DRIFT_LIMIT:?}")))?.map_err(refused)
        }
        () = cancel.cancelled() => Err(ClusterError::Stopped {
            step: "checking the manifests' objects for edits".into(),
        }),
    }
}
