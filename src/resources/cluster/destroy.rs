//! Destroying `hct_cluster`: its servers, load balancer and placement
//! groups (`cluster::teardown`), keeping in state what is left on failure.

use super::NODES;
use super::model;
use crate::cluster::wait::Deadline;
use crate::cluster::{NodeRecord, naming, teardown};
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::provider::{Applied, Context};
use crate::resources::node_group::{nodes_from, nodes_value};
use crate::resources::timeouts::{self, Operation};
use crate::resources::values::{failed, set};
use crate::tf::Value;

/// Deletes the cluster's servers and placement groups: every group's in
/// the serial form, the control plane's in the parallel form (see
/// `cluster::teardown`).
pub async fn destroy(ctx: &Context, prior: &Value) -> Applied {
    let client = match ctx.hcloud() {
        Ok(c) => c,
        Err(d) => return failed(prior.clone(), d),
    };
    let timeout =
        timeouts::limit(prior, Operation::Delete).unwrap_or(Operation::Delete.default_limit());
    let deadline = Deadline::new(timeout, ctx.cancel.clone(), ctx.pace());
    let cluster = model::text(prior, "name").to_string();
    let scope = if model::parallel_form(prior) {
        teardown::Scope::ControlPlane
    } else {
        teardown::Scope::Everything
    };
    match teardown::delete_cluster(&client, &cluster, scope, &deadline).await {
        Ok(()) => Applied::default(),
        Err(e) => {
            // Keep what still exists in state.
            let mut state = prior.clone();
            if let Ok(left) = client
                .servers(&naming::group_selector(&cluster, CONTROL_PLANE_GROUP))
                .await
            {
                let nodes: Vec<NodeRecord> = nodes_from(prior.get(NODES))
                    .into_iter()
                    .filter(|n| left.iter().any(|s| s.id == n.server_id))
                    .collect();
                set(&mut state, NODES, nodes_value(&nodes));
            }
            failed(state, e.to_diagnostic())
        }
    }
}
