//! Ready means Ready: after an apply, the wait until a group's nodes are
//! Ready in Kubernetes, when a CNI makes that possible. Without a CNI no
//! node is ever Ready, so there is no wait (the control plane's plan warns).
//! The control plane knows from its bootstrap manifests; a pool asks the
//! cluster whether a CNI's DaemonSet exists.

use crate::cluster::NodeRecord;
use crate::cluster::kube_api::{KubeApi, nodes};
use crate::cluster::settings::ClusterSettings;
use crate::cluster::wait::Deadline;
use crate::provider::Context;
use crate::tf::Diagnostic;

/// Whether the group waits for Ready nodes.
pub enum CniRule {
    /// The bootstrap manifests bring a CNI (or not).
    Known(bool),
    /// A CNI's DaemonSet exists in the cluster.
    Installed,
}

/// The credentials and route to the cluster's API server at its endpoint.
pub async fn api_access(
    ctx: &Context,
    settings: &ClusterSettings,
) -> Result<
    (
        Option<std::net::SocketAddr>,
        crate::talos::client_config::ApiCredentials,
    ),
    Diagnostic,
> {
    let proxy = ctx.talos_proxy().await?;
    let credentials = settings.kubernetes_trust().map_err(|e| e.to_diagnostic())?;
    Ok((proxy, credentials))
}

/// Waits until each of `nodes` is Ready, when `rule` says a CNI runs,
/// until the operation's `deadline` (the one its apply started).
pub async fn wait_ready(
    ctx: &Context,
    deadline: &Deadline,
    settings: &ClusterSettings,
    nodes: &[NodeRecord],
    rule: CniRule,
) -> Result<(), Diagnostic> {
    if nodes.is_empty() || matches!(rule, CniRule::Known(false)) {
        return Ok(());
    }
    let endpoint = settings.plan.cluster_endpoint();
    let ip = nodes::endpoint_ip(&endpoint)
        .ok_or_else(|| Diagnostic::error("No Kubernetes API", format!("{endpoint} names no IP")))?;
    let (proxy, credentials) = api_access(ctx, settings).await?;
    let api = KubeApi {
        ip,
        proxy,
        credentials: &credentials,
    };
    if matches!(rule, CniRule::Installed) {
        match nodes::cni_installed(&api).await {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(why) => {
                // The nodes run; only the Ready check is skipped.
                tracing::warn!(
                    "not waiting for Ready nodes: cannot tell whether a CNI runs: {why}"
                );
                return Ok(());
            }
        }
    }
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    nodes::wait_ready(&api, &names, deadline)
        .await
        .map_err(|e| e.to_diagnostic())
}
