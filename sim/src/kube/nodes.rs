//! What the kubelets and the control plane's static pods put in the store:
//! a Node per node whose kubelet registered (named as the node, its
//! private IP as InternalIP, its kubelet's version), a kubelet-serving CSR
//! when it first registers (which a stored approver may approve, see
//! `approver`), and the mirror pods `kube-apiserver-<node>`,
//! `kube-controller-manager-<node>`, `kube-scheduler-<node>` of each
//! control plane in `kube-system`.
//!
//! `Ready` is `False` (kubelet's "cni plugin not initialized") until a CNI
//! runs: the sim counts any DaemonSet, in any namespace, whose name or
//! `k8s-app`, `app` or `app.kubernetes.io/name` label names a known CNI
//! (cilium, flannel, calico, canal, kube-router, weave) as one. `Unknown`
//! while the kubelet is down. A node whose server is gone is removed (as
//! the Hetzner CCM's node lifecycle controller would).

use std::net::IpAddr;

use serde_json::{Value, json};

use super::csr;
use super::kinds::{self, Resource};
use super::store::{ClusterStore, labels_of};
use super::timestamp;

/// The CNIs whose DaemonSets the sim recognises.
pub const CNI_NAMES: [&str; 6] = [
    "cilium",
    "flannel",
    "calico",
    "canal",
    "kube-router",
    "weave",
];

/// What the Talos side knows of one node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    pub ip: IpAddr,
    pub control_plane: bool,
    /// kubelet runs and is registered (or able to register) now.
    pub kubelet_running: bool,
    /// `v1.35.2`
    pub kubelet_version: String,
    /// The Kubernetes release of each control-plane static pod
    /// (kube-apiserver, kube-controller-manager, kube-scheduler), as the
    /// node's config names their images.
    pub static_pod_versions: [String; 3],
    /// `Talos (v1.12.6)`
    pub os_image: String,
    /// `amd64` or `arm64`
    pub arch: &'static str,
}

fn resource(store: &ClusterStore, group: &str, plural: &str) -> Resource {
    let version = "v1";
    kinds::find(&store.resources(), group, version, plural)
        .expect("built in")
        .clone()
}

/// Whether a CNI DaemonSet is stored.
pub fn cni_present(store: &ClusterStore) -> bool {
    let daemonsets = resource(store, "apps", "daemonsets");
    store
        .list(&daemonsets, None, &Default::default(), &[])
        .iter()
        .any(|ds| is_cni_daemonset(ds))
}

/// Whether a DaemonSet is a CNI's: its name or its `k8s-app`, `app` or
/// `app.kubernetes.io/name` label names one.
pub fn is_cni_daemonset(ds: &Value) -> bool {
    let labels = labels_of(ds);
    let names = [
        ds["metadata"]["name"].as_str(),
        labels.get("k8s-app").map(String::as_str),
        labels.get("app").map(String::as_str),
        labels.get("app.kubernetes.io/name").map(String::as_str),
    ];
    names
        .into_iter()
        .flatten()
        .any(|n| CNI_NAMES.iter().any(|cni| n.contains(cni)))
}

/// Brings the store in line with the nodes: registers new ones (and files
/// their kubelet-serving CSR), refreshes the status of known ones, removes
/// the ones that are gone, keeps the static pods.
pub fn sync(store: &mut ClusterStore, facts: &[NodeFacts]) {
    let nodes = resource(store, "", "nodes");
    let pods = resource(store, "", "pods");
    let csrs = resource(store, "certificates.k8s.io", "certificatesigningrequests");
    let cni = cni_present(store);
    let known: Vec<String> = store
        .list(&nodes, None, &Default::default(), &[])
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    for gone in known
        .iter()
        .filter(|k| !facts.iter().any(|f| &f.name == *k))
    {
        let _ = store.delete(&nodes, "", gone);
        for pod in static_pod_names(gone) {
            let _ = store.delete(&pods, "kube-system", &pod);
        }
    }
    for fact in facts {
        let existing = store.get(&nodes, "", &fact.name).cloned();
        if existing.is_none() && !fact.kubelet_running {
            continue;
        }
        let desired = node(fact, cni, existing.as_ref(), store.now);
        match existing {
            None => {
                let _ = store.create(&nodes, "", desired, "kubelet");
                let _ = store.create(&csrs, "", csr::kubelet_csr(&fact.name, fact.ip), "kubelet");
            }
            Some(old) => {
                let mut updated = old.clone();
                updated["status"] = desired["status"].clone();
                updated["spec"]["taints"] = desired["spec"]["taints"].clone();
                for (k, v) in desired["metadata"]["labels"]
                    .as_object()
                    .into_iter()
                    .flatten()
                {
                    updated["metadata"]["labels"][k] = v.clone();
                }
                store.replace(&nodes, &old, updated);
            }
        }
        if fact.control_plane && fact.kubelet_running {
            for pod in static_pods(fact, store.now) {
                let name = pod["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                match store.get(&pods, "kube-system", &name).cloned() {
                    None => {
                        let _ = store.create(&pods, "kube-system", pod, "kubelet");
                    }
                    Some(old) if old["spec"] != pod["spec"] => {
                        let mut updated = old.clone();
                        updated["spec"] = pod["spec"].clone();
                        updated["status"] = pod["status"].clone();
                        store.replace(&pods, &old, updated);
                    }
                    Some(_) => {}
                }
            }
        }
    }
    let hosted = facts.iter().any(|f| f.control_plane && f.kubelet_running);
    super::approver::run(store, hosted);
}

/// The node's InternalIP, as registered.
pub fn internal_ip(node: &Value) -> Option<IpAddr> {
    node["status"]["addresses"]
        .as_array()?
        .iter()
        .find(|a| a["type"] == "InternalIP")?["address"]
        .as_str()?
        .parse()
        .ok()
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, since: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "lastHeartbeatTime": since,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    })
}

pub(crate) fn node(fact: &NodeFacts, cni: bool, old: Option<&Value>, now: u64) -> Value {
    let (ready, reason, message) = match (fact.kubelet_running, cni) {
        (false, _) => (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        ),
        (true, true) => ("True", "KubeletReady", "kubelet is posting ready status"),
        (true, false) => (
            "False",
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false \
             reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
        ),
    };
    let since = |kind: &str, status: &str| {
        old.and_then(|o| o["status"]["conditions"].as_array())
            .and_then(|c| {
                c.iter()
                    .find(|c| c["type"] == kind && c["status"] == status)
            })
            .and_then(|c| c["lastTransitionTime"].as_str())
            .map_or_else(|| timestamp(now), str::to_string)
    };
    let pressure = |kind: &str, reason: &str, message: &str| {
        let status = if fact.kubelet_running {
            "False"
        } else {
            "Unknown"
        };
        condition(kind, status, reason, message, &since(kind, status))
    };
    let mut labels = json!({
        "beta.kubernetes.io/arch": fact.arch,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": fact.arch,
        "kubernetes.io/hostname": fact.name,
        "kubernetes.io/os": "linux",
    });
    let mut taints = Vec::new();
    if fact.control_plane {
        labels["node-role.kubernetes.io/control-plane"] = json!("");
        taints
            .push(json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}));
    }
    if ready != "True" {
        let key = if ready == "False" {
            "node.kubernetes.io/not-ready"
        } else {
            "node.kubernetes.io/unreachable"
        };
        taints.push(json!({"key": key, "effect": "NoSchedule"}));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": fact.name, "labels": labels},
        "spec": {"taints": taints},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": fact.ip.to_string()},
                {"type": "Hostname", "address": fact.name},
            ],
            "conditions": [
                pressure("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                pressure("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                pressure("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", ready, reason, message, &since("Ready", ready)),
            ],
            "nodeInfo": {
                "architecture": fact.arch,
                "containerRuntimeVersion": "containerd://2.1.5",
                "kernelVersion": "6.12.57-talos",
                "kubeletVersion": fact.kubelet_version,
                "operatingSystem": "linux",
                "osImage": fact.os_image,
            },
        },
    })
}

/// The control-plane components Talos runs as static pods.
const STATIC_PODS: [&str; 3] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];

fn static_pod_names(node: &str) -> [String; 3] {
    STATIC_PODS.map(|c| format!("{c}-{node}"))
}

pub(crate) fn static_pods(fact: &NodeFacts, now: u64) -> Vec<Value> {
    STATIC_PODS
        .iter()
        .zip(&fact.static_pod_versions)
        .map(|(component, version)| {
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": format!("{component}-{}", fact.name),
                    "namespace": "kube-system",
                    "labels": {"k8s-app": component, "tier": "control-plane"},
                    "annotations": {"kubernetes.io/config.source": "file"},
                },
                "spec": {
                    "nodeName": fact.name,
                    "hostNetwork": true,
                    "priorityClassName": "system-cluster-critical",
                    "containers": [{
                        "name": component,
                        "image": format!("registry.k8s.io/{component}:{version}"),
                    }],
                },
                "status": {
                    "phase": "Running",
                    "hostIP": fact.ip.to_string(),
                    "podIP": fact.ip.to_string(),
                    "startTime": timestamp(now),
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            })
        })
        .collect()
}
