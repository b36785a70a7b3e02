//! Destroying a cluster without resetting nodes (the whole cluster goes):
//! its servers, its API load balancer, its placement groups.
//!
//! Which groups: in the serial form the pools depend on the cluster, so
//! Terraform has destroyed them first and any pool server still labelled
//! with the cluster is left behind by a killed run: every group goes. In
//! the parallel form the pools do not depend on the cluster, and Terraform
//! may create them while it replaces a tainted cluster: only the control
//! plane's group goes, the pools' are theirs.

use futures_util::future::join_all;
use tracing::info;

use super::ClusterError;
use super::naming;
use super::wait::Deadline;
use crate::hcloud::Client;
use crate::network_plan::CONTROL_PLANE_GROUP;

/// Which of the cluster's groups its destroy deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every group labelled with the cluster (the serial form).
    Everything,
    /// The control plane's only (the parallel form).
    ControlPlane,
}

/// Deletes the servers of `cluster` in `scope`, then its API load
/// balancer, then the placement groups in `scope`.
pub async fn delete_cluster(
    client: &Client,
    cluster: &str,
    scope: Scope,
    deadline: &Deadline,
) -> Result<(), ClusterError> {
    let selector = match scope {
        Scope::Everything => naming::cluster_selector(cluster),
        Scope::ControlPlane => naming::group_selector(cluster, CONTROL_PLANE_GROUP),
    };
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
    super::endpoint::delete(client, cluster).await?;
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
