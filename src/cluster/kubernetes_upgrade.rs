//! Kubernetes upgrades in place, in the order `talosctl upgrade-k8s` takes:
//! a new `kubernetes_version` changes every node's config (its images), and
//! before those configs go out (`converge`):
//!
//! 1. control planes, one at a time: the config the node runs gets only the
//!    new control-plane images (kube-apiserver, kube-controller-manager,
//!    kube-scheduler, and kube-proxy's), and hct waits until the node's
//!    static pods (their mirror pods in `kube-system`) run them and its API
//!    server is ready, before the next node;
//! 2. then the configs are applied as for any change, a node at a time on
//!    the control plane and a pool's budget at a time in pools; a node
//!    whose kubelet moves is done once its Node reports the new
//!    `kubeletVersion` (and is Ready, when a CNI runs). No kubelet moves
//!    before every control plane runs the release (kubelets must not be
//!    newer than the API servers), which makes pools applied beside the
//!    cluster wait.
//!
//! What a node runs decides, never state alone: the images of the config
//! it runs (read over the Talos API) and its pods and Node (the Kubernetes
//! API). So an interrupted upgrade goes on where it stopped, and a node
//! already moved is not patched again.

use std::net::Ipv4Addr;

use tokio::sync::OnceCell;
use tracing::info;

use super::ClusterError;
use super::control_plane;
use super::group::Group;
use super::kube_api::{self, KubeApi, nodes, pods};
use super::record::NodeRecord;
use super::slots;
use super::wait::{self, Retry};
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::talos::Role;
use crate::talos::api::{ApplyMode, TalosClient, TalosError};
use crate::talos::client_config::ApiCredentials;
use crate::talos::config::{
    CONTROL_PLANE_COMPONENTS, Contract, RunningImages, config_sha256, control_plane_image,
    kubelet_image, with_control_plane_images,
};
use crate::talos::release::{KubernetesVersion, UpgradeStep};

/// The Kubernetes release the group's configs are made for.
pub fn target(group: &Group<'_>) -> Result<KubernetesVersion, ClusterError> {
    match &group.settings.kubernetes_version {
        Some(version) => Ok(version.clone()),
        None => Contract::of(&group.settings.talos_version)
            .map(Contract::default_kubernetes_version)
            .map_err(ClusterError::config(group.cluster())),
    }
}

fn components() -> Vec<&'static str> {
    CONTROL_PLANE_COMPONENTS.iter().map(|(c, _)| *c).collect()
}

/// The config `node` runs and its images; None in maintenance mode.
async fn running(
    group: &Group<'_>,
    node: &NodeRecord,
) -> Result<Option<(String, RunningImages)>, ClusterError> {
    let address = group.address(node.ip);
    let text = wait::until(
        group.deadline,
        &node.name,
        "reading the machine config it runs",
        || async {
            match TalosClient::connect(&address, group.trust).await {
                Ok(mut client) => Ok(Some(client.machine_config().await?)),
                Err(TalosError::Maintenance { .. }) => Ok(None),
                Err(e) => Err(Retry::from(e)),
            }
        },
    )
    .await?;
    let Some(text) = text else {
        return Ok(None);
    };
    let images = RunningImages::of(&text).map_err(ClusterError::config(&node.name))?;
    Ok(Some((text, images)))
}

/// Refuses a jump the control plane cannot make from what `node` runs:
/// more than one minor ahead, or an older minor.
fn check_skew(
    node: &str,
    running: &KubernetesVersion,
    target: &KubernetesVersion,
) -> Result<(), ClusterError> {
    if running.upgrade_to(target) == UpgradeStep::Allowed {
        return Ok(());
    }
    let (major, from) = running.line();
    Err(ClusterError::Refused {
        summary: "Unsupported Kubernetes upgrade",
        detail: format!(
            "{node} runs Kubernetes {running}; the control plane moves to the next minor release \
             at most and never to an older one, so {target} cannot follow. Set \
             kubernetes_version to a v{major}.{from} or v{major}.{} release.",
            from + 1
        ),
    })
}

/// Step 1 on the control plane: `nodes` (those whose config changes), one
/// at a time. Nothing for pools.
pub(super) async fn control_plane_components(
    group: &Group<'_>,
    nodes: &[NodeRecord],
) -> Result<(), ClusterError> {
    if group.spec.role != Role::ControlPlane {
        return Ok(());
    }
    let target = target(group)?;
    let credentials = group.settings.kubernetes_trust()?;
    for node in nodes {
        let Some((text, images)) = running(group, node).await? else {
            continue; // no config: it gets the whole new one
        };
        let behind = images.behind(&target);
        if behind.is_empty() {
            // Moved already. Its kubelet not yet: an upgrade that stopped
            // after this node; its pods must run before the next one goes.
            if images.kubelet.as_deref() != Some(kubelet_image(&target).as_str()) {
                until_static_pods(group, node, &target, &credentials).await?;
            }
            continue;
        }
        if let Some(running) = images.api_server() {
            check_skew(&node.name, &running, &target)?;
        }
        let from = images
            .api_server()
            .map_or_else(|| "Talos' default".to_string(), |v| v.to_string());
        info!(node = %node.name, from, to = %target, components = behind.join(", "), "upgrading the control-plane components");
        let config =
            with_control_plane_images(&text, &target).map_err(ClusterError::config(&node.name))?;
        apply(group, node, config.as_str()).await?;
        until_static_pods(group, node, &target, &credentials).await?;
        info!(node = %node.name, kubernetes = %target, "control-plane components upgraded");
    }
    Ok(())
}

/// Applies `config` to a configured node (without reboot: Talos restarts
/// the static pods) and records what it runs now.
async fn apply(group: &Group<'_>, node: &NodeRecord, config: &str) -> Result<(), ClusterError> {
    let address = group.address(node.ip);
    wait::until(
        group.deadline,
        &node.name,
        "applying the new control-plane images",
        || async {
            let mut client = TalosClient::connect(&address, group.trust).await?;
            client
                .apply_configuration(config.as_bytes(), ApplyMode::Auto)
                .await?;
            Ok(())
        },
    )
    .await?;
    let sha256 = config_sha256(config);
    group
        .recorder
        .update(&node.name, |n| n.config_sha256 = Some(sha256));
    Ok(())
}

/// Until the node's static pods run `target`'s images and its API server
/// is ready.
async fn until_static_pods(
    group: &Group<'_>,
    node: &NodeRecord,
    target: &KubernetesVersion,
    credentials: &ApiCredentials,
) -> Result<(), ClusterError> {
    let api = KubeApi {
        ip: node.ip.into(),
        proxy: group.proxy,
        credentials,
    };
    let step = format!("waiting for its static pods to run Kubernetes {target}");
    wait::until(group.deadline, &node.name, &step, || async {
        let behind = pods::static_pods_behind(&api, &node.name, &components(), |c| {
            control_plane_image(c, target)
        })
        .await
        .map_err(Retry::Again)?;
        if !behind.is_empty() {
            return Err(Retry::Again(behind.join(", ")));
        }
        kube_api::readyz(node.ip.into(), group.proxy, credentials)
            .await
            .map_err(Retry::Again)
    })
    .await
}

/// Step 2, for one node about to get its new config: whether its kubelet
/// moves to the group's release (its running config names another kubelet
/// image). Before one does, every control plane must run the release.
pub(super) async fn kubelet_moves(
    group: &Group<'_>,
    node: &NodeRecord,
    control_plane_on_release: &OnceCell<()>,
) -> Result<bool, ClusterError> {
    let target = target(group)?;
    let Some((_, images)) = running(group, node).await? else {
        return Ok(false);
    };
    if images.kubelet.as_deref() == Some(kubelet_image(&target).as_str()) {
        return Ok(false);
    }
    control_plane_on_release
        .get_or_try_init(|| {
            control_plane::unless_failed(group, &node.name, until_control_plane_on(group, &target))
        })
        .await?;
    let from = images
        .kubelet_release()
        .map_or_else(|| "Talos' default".to_string(), |v| v.to_string());
    info!(node = %node.name, from, to = %target, "upgrading kubelet");
    Ok(true)
}

/// Until every control plane's static pods run `target`'s images and are
/// ready (for a pool: then every control plane's kubelet is done moving, by
/// the rule of its own upgrade, so no pool's kubelet moves beside one), asked
/// at the cluster's endpoint (pools and the control plane share one
/// release: `worker_join` carries it).
async fn until_control_plane_on(
    group: &Group<'_>,
    target: &KubernetesVersion,
) -> Result<(), ClusterError> {
    let plan = &group.settings.plan;
    let control_planes = slots::of(group.cluster(), CONTROL_PLANE_GROUP, plan.control_plane());
    let credentials = group.settings.kubernetes_trust()?;
    let api = endpoint_api(group, &credentials)?;
    let label = match group.spec.role {
        Role::ControlPlane => "control plane".to_string(),
        Role::Worker => format!("pool {}", group.spec.group),
    };
    let step = format!("waiting for every control plane to run Kubernetes {target}");
    wait::until(group.deadline, &label, &step, || async {
        let mut behind = Vec::new();
        for cp in &control_planes {
            let pods = pods::static_pods_behind(&api, &cp.name, &components(), |c| {
                control_plane_image(c, target)
            })
            .await
            .map_err(Retry::Again)?;
            if !pods.is_empty() {
                behind.push(format!("{}: {}", cp.name, pods.join(", ")));
            }
        }
        if behind.is_empty() && group.spec.role == Role::Worker {
            // The control planes' kubelets go before the pools'.
            let names: Vec<&str> = control_planes.iter().map(|cp| cp.name.as_str()).collect();
            behind = kubelets_behind(&api, &names, &target.to_string())
                .await
                .map_err(Retry::Again)?;
        }
        if behind.is_empty() {
            Ok(())
        } else {
            Err(Retry::Again(behind.join("; ")))
        }
    })
    .await?;
    info!(group = %group.spec.group, kubernetes = %target, "every control plane runs the release");
    Ok(())
}

fn endpoint_api<'a>(
    group: &Group<'_>,
    credentials: &'a ApiCredentials,
) -> Result<KubeApi<'a>, ClusterError> {
    let endpoint = group.settings.plan.cluster_endpoint();
    let ip = nodes::endpoint_ip(&endpoint)
        .or_else(|| {
            group
                .settings
                .plan
                .control_plane()
                .ips
                .first()
                .map(|ip: &Ipv4Addr| (*ip).into())
        })
        .ok_or_else(|| ClusterError::Conflict(format!("{endpoint} names no IP")))?;
    Ok(KubeApi {
        ip,
        proxy: group.proxy,
        credentials,
    })
}

/// After a node's kubelet moved: until its Node reports the release, and
/// is Ready when a CNI runs in the cluster.
pub(super) async fn until_kubelet(
    group: &Group<'_>,
    node: &NodeRecord,
) -> Result<(), ClusterError> {
    let target = target(group)?.to_string();
    let credentials = group.settings.kubernetes_trust()?;
    let api = endpoint_api(group, &credentials)?;
    let step = format!("waiting for its Node to report kubelet {target}");
    wait::until(group.deadline, &node.name, &step, || async {
        let behind = kubelets_behind(&api, &[node.name.as_str()], &target)
            .await
            .map_err(Retry::Again)?;
        if behind.is_empty() {
            Ok(())
        } else {
            Err(Retry::Again(behind.join("; ")))
        }
    })
    .await?;
    info!(node = %node.name, kubernetes = %target, "kubelet upgraded");
    Ok(())
}

/// The nodes of `names` whose kubelet is not done moving to `target`, each
/// with why. Done means: its Node reports `target`, and is Ready when a CNI
/// runs in the cluster. The one rule for a node's own upgrade and for pools
/// waiting on the control plane's kubelets.
async fn kubelets_behind(
    api: &KubeApi<'_>,
    names: &[&str],
    target: &str,
) -> Result<Vec<String>, String> {
    let ready = nodes::cni_installed(api).await?;
    let mut behind = Vec::new();
    for name in names {
        if let Err(why) = pods::kubelet_on(api, name, target, ready).await {
            behind.push(format!("{name}: {why}"));
        }
    }
    Ok(behind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_plane_moves_one_minor_at_a_time_and_never_back() {
        let v = |text: &str| KubernetesVersion::parse(text).unwrap();
        assert!(check_skew("cp-1", &v("v1.35.2"), &v("v1.36.3")).is_ok());
        assert!(check_skew("cp-1", &v("v1.35.2"), &v("v1.35.0")).is_ok());
        let far = check_skew("cp-1", &v("v1.34.1"), &v("v1.36.3")).unwrap_err();
        assert!(
            far.to_string().contains("cp-1 runs Kubernetes v1.34.1"),
            "{far}"
        );
        assert!(check_skew("cp-1", &v("v1.36.3"), &v("v1.35.2")).is_err());
    }
}
