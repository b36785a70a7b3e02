//! Destroying a cluster: every server, load balancer and placement group
//! labelled with it goes, in any group (pools destroyed earlier, or left behind by a killed
//! run), without resetting nodes (the whole cluster goes).

use futures_util::future::join_all;
use tracing::info;

use super::ClusterError;
use super::naming;
use super::wait::Deadline;
use crate::hcloud::{Client, LabelSelector};

/// Deletes every server, then the API load balancer and every placement
/// group, of `cluster`.
pub async fn delete_cluster(
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
