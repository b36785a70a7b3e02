//! Talos after the servers run: every control plane answers over mTLS, etcd
//! is bootstrapped once in the cluster's life (`bootstrap`), all are etcd
//! members with etcd and kubelet healthy and their Kubernetes API servers
//! ready;
//! workers are configured with kubelet running. (Not Kubernetes `Ready`:
//! the CNI comes after, installed with the plan's `cilium_values`.)

use futures_util::future::join_all;
use tracing::info;

use super::ClusterError;
use super::bootstrap::{self, EtcdRecord};
use super::control_plane;
use super::group::Group;
use super::kube_api;
use super::record::NodeRecord;
use super::wait::{self, Retry};
use crate::talos::Role;
use crate::talos::api::{EtcdMember, EtcdMembers, TalosClient};
use crate::talos::client_config::ApiCredentials;

/// Waits until the control plane is up, bootstrapping etcd if the cluster
/// never was (`bootstrap::once`; `may_survive`: a control plane of before
/// this run is left). `record` is what state knows of etcd, updated as soon
/// as that changes (so a failure later still saves it).
pub async fn control_plane(
    group: &Group<'_>,
    nodes: &[NodeRecord],
    may_survive: bool,
    record: &mut EtcdRecord,
) -> Result<(), ClusterError> {
    if nodes.is_empty() {
        return Ok(());
    }
    for result in join_all(nodes.iter().map(|n| talos_api(group, n))).await {
        result?;
    }
    *record = bootstrap::once(group, nodes, may_survive, *record).await?;
    etcd_members(group, nodes).await?;
    // etcd healthy on each node is the stricter wait: Talos checks it with
    // a read through the node's own member that needs a leader, so a new
    // member passes only once it votes. The member list alone can still
    // show a replaced node's old member, of the same hostname, as a voter.
    for result in join_all(
        nodes
            .iter()
            .map(|n| services(group, n, &["etcd", "kubelet"])),
    )
    .await
    {
        result?;
    }
    let credentials = group.settings.kubernetes_trust()?;
    for result in join_all(nodes.iter().map(|n| api_server(group, n, &credentials))).await {
        result?;
    }
    info!(nodes = nodes.len(), "control plane is up");
    Ok(())
}

/// Waits until every worker is configured and runs kubelet: first until
/// the control plane can take it (it may still be coming up beside the
/// pool), then for the node itself.
pub async fn workers(group: &Group<'_>, nodes: &[NodeRecord]) -> Result<(), ClusterError> {
    let waits = nodes.iter().map(|n| async move {
        control_plane::until_joinable(group, n).await?;
        talos_api(group, n).await?;
        services(group, n, &["kubelet"]).await
    });
    for result in join_all(waits).await {
        result?;
    }
    Ok(())
}

/// Until a node that went down (an upgrade, a new server type) is back in
/// service: control planes with etcd and kubelet healthy and their API
/// server ready, workers with kubelet running.
pub(super) async fn back_in_service(
    group: &Group<'_>,
    node: &NodeRecord,
) -> Result<(), ClusterError> {
    talos_api(group, node).await?;
    match group.spec.role {
        Role::ControlPlane => {
            services(group, node, &["etcd", "kubelet"]).await?;
            let credentials = group.settings.kubernetes_trust()?;
            api_server(group, node, &credentials).await
        }
        Role::Worker => services(group, node, &["kubelet"]).await,
    }
}

/// Until the node answers with the cluster's certificate (it is configured).
async fn talos_api(group: &Group<'_>, node: &NodeRecord) -> Result<(), ClusterError> {
    let address = group.address(node.ip);
    wait::until(
        group.deadline,
        &node.name,
        "waiting for the Talos API",
        || {
            let address = address.clone();
            async move {
                let mut client = TalosClient::connect(&address, group.trust).await?;
                client.version().await?;
                Ok(())
            }
        },
    )
    .await
}

/// Until etcd lists every control-plane node. Each node asks the etcd of
/// the whole cluster (through every control-plane endpoint), so the first
/// that answers decides this attempt; the next node is asked only when one
/// cannot be.
async fn etcd_members(group: &Group<'_>, nodes: &[NodeRecord]) -> Result<(), ClusterError> {
    let first = &nodes[0];
    wait::until(
        group.deadline,
        &first.name,
        "waiting for all control planes in etcd",
        || async move {
            let mut last = None;
            for ask in nodes {
                match etcd_lists_all(group, ask, nodes).await {
                    Ok(listed) => {
                        return listed.map_err(|why| Retry::Again(format!("{}: {why}", ask.name)));
                    }
                    Err(Retry::Fatal(e)) => return Err(Retry::Fatal(e)),
                    Err(Retry::Again(why)) => last.get_or_insert(format!("{}: {why}", ask.name)),
                };
            }
            Err(Retry::Again(last.unwrap_or_default()))
        },
    )
    .await
}

/// Whether etcd, asked on `ask`, lists every node of `nodes` as a voter:
/// Ok with etcd's answer (why not, if not), Err when `ask` did not answer.
async fn etcd_lists_all(
    group: &Group<'_>,
    ask: &NodeRecord,
    nodes: &[NodeRecord],
) -> Result<Result<(), String>, Retry> {
    let mut client = TalosClient::connect(&group.address(ask.ip), group.trust).await?;
    let why = match client.etcd_members(group.deadline.etcd_ask()).await? {
        EtcdMembers::Listed(members) => return Ok(lists_all(&members, nodes)),
        EtcdMembers::NoneReachable(why) | EtcdMembers::NoLeader(why) => why,
    };
    // No etcd yet: the node's own etcd service says what it waits for
    // (e.g. an image it cannot pull without egress).
    Ok(Err(match etcd_service_waiting(&mut client).await {
        Some(waits) => format!("{why}; {waits}"),
        None => why,
    }))
}

/// Whether `members` lists every node of `nodes` as a voter.
fn lists_all(members: &[EtcdMember], nodes: &[NodeRecord]) -> Result<(), String> {
    let missing: Vec<&str> = nodes
        .iter()
        .filter(|n| {
            !members
                .iter()
                .any(|m| m.hostname == n.name && !m.is_learner)
        })
        .map(|n| n.name.as_str())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("not yet etcd members: {}", missing.join(", ")))
    }
}

/// What the node's etcd service waits for, if it is not running healthy.
async fn etcd_service_waiting(client: &mut TalosClient) -> Option<String> {
    let services = client.services().await.ok()?;
    let etcd = services.iter().find(|s| s.id == "etcd")?;
    if etcd.state == "Running" && etcd.healthy {
        return None;
    }
    Some(if etcd.message.is_empty() {
        format!("etcd is {}", etcd.state)
    } else {
        format!("etcd is {}: {}", etcd.state, etcd.message)
    })
}

/// Until the node's Kubernetes API server says it is ready.
async fn api_server(
    group: &Group<'_>,
    node: &NodeRecord,
    credentials: &ApiCredentials,
) -> Result<(), ClusterError> {
    let address = group.address(node.ip);
    wait::until(
        group.deadline,
        &node.name,
        "waiting for the Kubernetes API server",
        || async {
            kube_api::readyz(address.ip, address.proxy, credentials)
                .await
                .map_err(Retry::Again)
        },
    )
    .await
}

/// Until each of `wanted` runs healthy on the node.
async fn services(
    group: &Group<'_>,
    node: &NodeRecord,
    wanted: &[&str],
) -> Result<(), ClusterError> {
    let address = group.address(node.ip);
    let step = format!("waiting for {}", wanted.join(" and "));
    wait::until(group.deadline, &node.name, &step, || {
        let address = address.clone();
        async move {
            let mut client = TalosClient::connect(&address, group.trust).await?;
            let services = client.services().await?;
            let pending: Vec<String> = wanted
                .iter()
                .filter_map(|id| match services.iter().find(|s| s.id == *id) {
                    Some(s) if s.state == "Running" && s.healthy => None,
                    Some(s) if s.message.is_empty() => Some(format!("{id} is {}", s.state)),
                    Some(s) => Some(format!("{id} is {}: {}", s.state, s.message)),
                    None => Some(format!("{id} is not started")),
                })
                .collect();
            if pending.is_empty() {
                Ok(())
            } else {
                Err(Retry::Again(pending.join(", ")))
            }
        }
    })
    .await
}
