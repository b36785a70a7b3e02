//! What Talos and the kubelets put in a cluster's Kubernetes store
//! (`crate::kube`), and API requests answered from it: before each request
//! the store learns which nodes' kubelets run (and at which version), and
//! on the first request after bootstrap it gets the bootstrap manifests the
//! control plane that serves renders (`talos::manifests`: Talos' own and
//! the `inlineManifests`), created where absent as Talos' bootstrap
//! manifests controller does.

use super::version::KubernetesVersion;
use crate::catalog::Architecture;
use crate::clock::Timestamp;
use crate::kube::api::{self, Answer, ApiRequest};
use crate::kube::manifests;
use crate::kube::nodes::{self, NodeFacts};
use crate::state::World;
use crate::talos::calls::NodeRef;
use crate::talos::cluster;
use crate::talos::config::{ClusterIdentity, MachineConfig};
use crate::talos::lifecycle;
use crate::talos::manifests as rendered;
use crate::talos::services;
use crate::talos::version::TalosVersion;

/// Answers an API request at the control plane `at`.
pub fn serve(world: &mut World, now: Timestamp, at: NodeRef, request: &ApiRequest) -> Answer {
    let Some((config, talos, ring)) = world
        .servers
        .get(&at.server)
        .and_then(|s| s.talos.as_ref())
        .and_then(|t| {
            Some((
                t.node.config()?.clone(),
                lifecycle::running_version(t)?,
                t.node.disk.etcd.member.as_ref()?.ring,
            ))
        })
    else {
        return crate::kube::KubeError::NoRoute.into();
    };
    sync(world, now, &config, &talos, ring);
    let now = now.unix_seconds();
    let store = world.kube.cluster(&store_id(&config.cluster, ring), now);
    store.now = now;
    api::handle(store, request)
}

/// Which store an API server reads: that of the etcd cluster (`ring`) its
/// node is a member of, so a second etcd of the same secrets starts empty.
pub fn store_id(cluster: &ClusterIdentity, ring: u64) -> String {
    format!("{}/{ring:016x}", cluster.id)
}

/// Brings the store of etcd cluster `ring` in line with the nodes;
/// `config` is the serving control plane's (running `talos`), whose
/// bootstrap manifests Talos applies at bootstrap.
pub fn sync(
    world: &mut World,
    now: Timestamp,
    config: &MachineConfig,
    talos: &TalosVersion,
    ring: u64,
) {
    let facts = facts(world, &config.cluster);
    let now = now.unix_seconds();
    let store = world.kube.cluster(&store_id(&config.cluster, ring), now);
    store.now = now;
    if !store.bootstrap_manifests_applied {
        let mut problems = Vec::new();
        let objects: Vec<(String, serde_json::Value)> =
            rendered::render(config, talos, &mut problems)
                .into_iter()
                .flat_map(|m| {
                    let id = m.id;
                    m.objects.into_iter().map(move |o| (id.clone(), o))
                })
                .collect();
        problems.extend(manifests::create_missing(store, objects));
        for problem in problems {
            tracing::debug!("emulated bootstrap manifests: {problem}");
        }
        store.bootstrap_manifests_applied = true;
    }
    nodes::sync(store, &facts);
}

/// The nodes configured for `cluster`, and whether their kubelets run:
/// Talos up, the kubelet service Running and healthy, and on a worker
/// registered with the API server at its endpoint.
pub fn facts(world: &World, cluster: &ClusterIdentity) -> Vec<NodeFacts> {
    let mut out = Vec::new();
    for server in world.servers.values() {
        let Some(talos) = server.talos.as_ref() else {
            continue;
        };
        let Some(config) = talos.node.config().filter(|c| c.cluster == *cluster) else {
            continue;
        };
        let addresses = cluster::private_ips(server);
        let Some(ip) = config
            .subnets
            .kubelet_node_ip(&addresses)
            .or_else(|| addresses.first().copied())
        else {
            continue;
        };
        let kubelet_running = talos.node.is_running()
            && services::of(world, server, &talos.node, config)
                .iter()
                .any(|s| s.id == "kubelet" && s.state == "Running" && s.healthy)
            && (config.is_control_plane() || talos.node.run.kubelet_registered);
        let arch = match server.server_type().map(|t| t.architecture) {
            Some(Architecture::Arm) => "arm64",
            _ => "amd64",
        };
        out.push(NodeFacts {
            name: cluster::hostname(server, Some(config)),
            ip,
            control_plane: config.is_control_plane(),
            kubelet_running,
            kubelet_version: KubernetesVersion::of(
                config.kubelet_version.as_deref(),
                &config.installs,
            )
            .git_version,
            static_pod_versions: static_pod_versions(config),
            os_image: format!("Talos ({})", talos.version),
            arch,
        });
    }
    out
}

/// The release each control-plane static pod runs: the tag of its image in
/// the config, else the API server's (Talos' default when none is named).
fn static_pod_versions(config: &MachineConfig) -> [String; 3] {
    let api_server =
        KubernetesVersion::of(config.kubernetes_version.as_deref(), &config.installs).git_version;
    let or_api_server = |tag: &Option<String>| tag.clone().unwrap_or_else(|| api_server.clone());
    [
        api_server.clone(),
        or_api_server(&config.controller_manager_version),
        or_api_server(&config.scheduler_version),
    ]
}
