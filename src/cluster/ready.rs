//! Ready means Ready: after an apply, the wait until a group's nodes are
//! Ready in Kubernetes, when a CNI makes that possible. Without a CNI no
//! node is ever Ready, so there is no wait (the control plane's plan warns).
//! The control plane knows from its bootstrap manifests; a pool asks the
//! cluster whether a CNI's DaemonSet exists.

use crate::net::Proxy;

use super::ClusterError;
use super::kube_api::{KubeApi, nodes};
use super::record::NodeRecord;
use super::settings::ClusterSettings;
use super::wait::Deadline;
use crate::talos::client_config::ApiCredentials;

/// Whether the group waits for Ready nodes.
#[derive(Debug)]
pub enum CniRule {
    /// The bootstrap manifests bring a CNI (or not).
    Known(bool),
    /// A CNI's DaemonSet exists in the cluster.
    Installed,
}

/// Waits until each of `nodes` is Ready, when `rule` says a CNI runs,
/// until the operation's `deadline` (the one its apply started).
pub async fn wait_ready(
    settings: &ClusterSettings,
    credentials: &ApiCredentials,
    proxy: Option<Proxy>,
    nodes: &[NodeRecord],
    rule: CniRule,
    deadline: &Deadline,
) -> Result<(), ClusterError> {
    if nodes.is_empty() || matches!(rule, CniRule::Known(false)) {
        return Ok(());
    }
    let endpoint = settings.plan.cluster_endpoint();
    let ip = nodes::endpoint_ip(&endpoint).ok_or_else(|| ClusterError::Refused {
        summary: "No Kubernetes API",
        detail: format!("{endpoint} names no IP"),
    })?;
    let api = KubeApi {
        ip,
        proxy,
        credentials,
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
    nodes::wait_ready(&api, &names, deadline).await
}
