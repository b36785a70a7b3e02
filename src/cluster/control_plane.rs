//! A pool's view of its cluster's control plane. In the parallel form
//! Terraform applies a pool beside `hct_cluster`, so the pool may create
//! its servers before any control plane exists, and a Talos upgrade may
//! reach it while the control plane still runs the old release. The pool
//! asks the control plane itself, over the Talos API with the credentials
//! of its own `worker_join`, which also shows a bundle that is not the
//! cluster's (another CA answers). Both waits stop at once when the
//! control plane's apply fails in the same run (`this_run`).

use std::future::Future;
use std::net::Ipv4Addr;

use tracing::info;

use super::ClusterError;
use super::group::Group;
use super::kube_api;
use super::record::NodeRecord;
use super::this_run;
use super::wait::{self, Retry};
use crate::talos::api::{TalosClient, TalosError};
use crate::talos::client_config::ApiCredentials;
use crate::talos::release::TalosVersion;

/// The error for a control plane that does not know the pool's secrets.
fn foreign_join(ip: Ipv4Addr, why: &TalosError) -> ClusterError {
    ClusterError::ForeignJoin {
        detail: format!(
            "The control plane at {ip} does not run with this pool's machine secrets ({why}), \
             so the pool's nodes could never join it. Set worker_join to the bundle the cluster \
             takes: hct_cluster_secrets.<name>.worker_join (the parallel form) or \
             hct_cluster.<name>.worker_join (the serial form)."
        ),
    }
}

/// Runs `wait` (for the control plane, on behalf of `waiter`) unless the
/// control plane's apply fails in this run first: then it stops, saying so.
/// A cluster not applied in this run never fails here, so the wait runs on.
pub(super) async fn unless_failed<T>(
    group: &Group<'_>,
    waiter: &str,
    wait: impl Future<Output = Result<T, ClusterError>>,
) -> Result<T, ClusterError> {
    tokio::select! {
        result = wait => result,
        why = this_run::control_plane_failure(group.settings) => {
            Err(ClusterError::ControlPlaneFailed {
                detail: format!(
                    "{waiter}: stopped waiting for the control plane of cluster {cluster}: \
                     its apply (hct_cluster) failed in this run ({why}), so it will not come \
                     up now. Fix the cluster's error and run apply again: it retries the \
                     control plane and this pool (failed creates are tainted; `terraform \
                     untaint` the cluster and the pool to keep their servers).",
                    cluster = group.cluster(),
                ),
            })
        }
    }
}

/// The release a control-plane node runs, asked with the pool's
/// credentials; not yet there (booting, maintenance mode) is retried.
async fn release_of(group: &Group<'_>, ip: Ipv4Addr) -> Result<String, Retry> {
    let address = group.address(ip);
    let asked = async {
        let mut client = TalosClient::connect(&address, group.trust).await?;
        Ok::<_, TalosError>(client.version().await?.tag)
    };
    match asked.await {
        Ok(tag) => Ok(tag),
        Err(e @ (TalosError::WrongCa { .. } | TalosError::Unauthorized { .. })) => {
            Err(Retry::Fatal(foreign_join(ip, &e)))
        }
        Err(TalosError::Maintenance { .. }) => {
            Err(Retry::Again(format!("{ip} is not configured yet")))
        }
        Err(e) => Err(Retry::from(e)),
    }
}

/// Until the control plane can take `node`: its first node answers over
/// the Talos API (with the pool's secrets) and the Kubernetes API at the
/// endpoint is ready, so kubelet can register. Works from before the
/// first control-plane server exists; logs each attempt for the node.
pub async fn until_joinable(group: &Group<'_>, node: &NodeRecord) -> Result<(), ClusterError> {
    let plan = &group.settings.plan;
    let Some(first) = plan.control_plane().ips.first().copied() else {
        return Ok(());
    };
    let endpoint = plan.cluster_endpoint();
    let credentials = group.settings.kubernetes_trust()?;
    let step = format!("waiting for the control plane at {endpoint}");
    let wait = wait::until(group.deadline, &node.name, &step, || async {
        release_of(group, first).await?;
        kube_api::readyz(first.into(), group.proxy, &credentials)
            .await
            .map_err(Retry::Again)
    });
    unless_failed(group, &node.name, wait).await
}

/// Whether a control-plane node is in service: etcd and kubelet healthy,
/// its Kubernetes API server ready; else what it is waiting for.
async fn in_service(
    group: &Group<'_>,
    ip: Ipv4Addr,
    credentials: &ApiCredentials,
) -> Result<Option<String>, Retry> {
    let address = group.address(ip);
    let mut client = TalosClient::connect(&address, group.trust).await?;
    let services = client.services().await?;
    for id in ["etcd", "kubelet"] {
        if !services
            .iter()
            .any(|s| s.id == id && s.state == "Running" && s.healthy)
        {
            return Ok(Some(format!("{ip}: {id} is not healthy yet")));
        }
    }
    Ok(kube_api::readyz(ip.into(), group.proxy, credentials)
        .await
        .err()
        .map(|why| format!("{ip}: {why}")))
}

/// Until every control plane runs the pool's Talos release (or a newer
/// one) and is back in service: a pool moves its nodes to a release only
/// after the control plane did, whichever resource Terraform applies first.
pub async fn until_on_release(group: &Group<'_>) -> Result<(), ClusterError> {
    let target = &group.settings.talos_version;
    let ips = &group.settings.plan.control_plane().ips;
    let credentials = group.settings.kubernetes_trust()?;
    let step = format!("waiting for every control plane to run Talos {target}");
    let label = format!("pool {}", group.spec.group);
    let wait = wait::until(group.deadline, &label, &step, || async {
        let mut behind = Vec::new();
        for ip in ips {
            let tag = release_of(group, *ip).await?;
            if !TalosVersion::parse(&tag).is_ok_and(|running| running >= *target) {
                behind.push(format!("{ip} runs {tag}"));
            } else if let Some(why) = in_service(group, *ip, &credentials).await? {
                behind.push(why);
            }
        }
        if behind.is_empty() {
            Ok(())
        } else {
            Err(Retry::Again(behind.join(", ")))
        }
    });
    unless_failed(group, &label, wait).await?;
    info!(pool = %group.spec.group, release = %target, "every control plane runs the release");
    Ok(())
}
