//! Bootstrapping etcd exactly once in a cluster's life, decided from the
//! cluster itself.
//!
//! Talos refuses a Bootstrap only when the node's *own* etcd data
//! directory holds something. A control plane with empty data (a new one,
//! or one recreated behind the load balancer) takes the Bootstrap and starts
//! a second, empty etcd under the same CAs, whatever the others run. So
//! before any Bootstrap hct asks every control plane for etcd's members,
//! and sends it only when no control plane has an etcd and state does not
//! record that one was bootstrapped. A control plane that comes back
//! without data joins the running etcd like any other. When state records
//! a bootstrap but every control plane is new and none has etcd, the
//! cluster's etcd is gone: the apply stops and says so, instead of starting
//! an empty cluster under the old name.

use futures_util::future::join_all;
use tracing::info;

use super::ClusterError;
use super::group::Group;
use super::record::NodeRecord;
use super::wait::{self, Retry};
use crate::talos::api::{Bootstrapped, TalosClient, TalosError};

/// What state remembers of the cluster's etcd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdRecord {
    /// Bootstrap was sent once (or etcd was seen running): never again.
    Bootstrapped,
    /// No bootstrap in this cluster's life so far.
    NotYet,
}

/// What the control planes said of etcd.
enum Seen {
    /// `node` answered with etcd's members.
    Members { node: String },
    /// No control plane has a running etcd.
    Nothing,
}

/// Bootstraps etcd on the first of `nodes` if, and only if, the cluster
/// has never been bootstrapped; `created` are the nodes whose servers this
/// run made. Returns what state records from now on.
pub(super) async fn once(
    group: &Group<'_>,
    nodes: &[NodeRecord],
    created: &[String],
    record: EtcdRecord,
) -> Result<EtcdRecord, ClusterError> {
    let Some(first) = nodes.first() else {
        return Ok(record);
    };
    match (seen(group, nodes).await, record) {
        (Seen::Members { node }, _) => {
            info!(%node, "etcd runs; no bootstrap");
            Ok(EtcdRecord::Bootstrapped)
        }
        (Seen::Nothing, EtcdRecord::Bootstrapped)
            if nodes.iter().all(|n| created.contains(&n.name)) =>
        {
            Err(ClusterError::EtcdLost {
                nodes: nodes.iter().map(|n| n.name.clone()).collect(),
            })
        }
        (Seen::Nothing, EtcdRecord::Bootstrapped) => {
            // Nodes that kept their data bring etcd back as they start.
            info!("etcd was bootstrapped before; waiting for it, no bootstrap");
            Ok(EtcdRecord::Bootstrapped)
        }
        (Seen::Nothing, EtcdRecord::NotYet) => {
            send(group, first).await?;
            Ok(EtcdRecord::Bootstrapped)
        }
    }
}

/// Asks every control plane (which answers with the cluster's CA by now)
/// for etcd's members, once each.
async fn seen(group: &Group<'_>, nodes: &[NodeRecord]) -> Seen {
    let asked = join_all(nodes.iter().map(|node| async move {
        let address = group.address(node.ip);
        let mut client = TalosClient::connect(&address, group.trust).await.ok()?;
        let members = client.etcd_members().await.ok()?;
        (!members.is_empty()).then(|| node.name.clone())
    }))
    .await;
    match asked.into_iter().flatten().next() {
        Some(node) => Seen::Members { node },
        None => Seen::Nothing,
    }
}

/// Sends the Bootstrap; already bootstrapped (the node's own data is not
/// empty: a rerun after a lost answer) is fine.
async fn send(group: &Group<'_>, node: &NodeRecord) -> Result<(), ClusterError> {
    let address = group.address(node.ip);
    let outcome = wait::until(group.deadline, &node.name, "bootstrapping etcd", || {
        let address = address.clone();
        async move {
            let mut client = TalosClient::connect(&address, group.trust).await?;
            match client.bootstrap().await {
                Ok(outcome) => Ok(outcome),
                Err(e @ TalosError::NotControlPlane { .. }) => {
                    Err(Retry::Fatal(ClusterError::Talos(e)))
                }
                Err(e) => Err(e.into()),
            }
        }
    })
    .await?;
    match outcome {
        Bootstrapped::Now => info!(node = %node.name, "bootstrapped etcd"),
        Bootstrapped::Already => info!(node = %node.name, "etcd was bootstrapped already"),
    }
    Ok(())
}
