//! The v1alpha1 document's `machine` section: what Talos generates for the
//! contract, plus the kubelet settings a private Hetzner cluster needs.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::input::{Node, Role};
use super::{images, install, network};
use crate::network_plan::NetworkPlan;
use crate::talos::{JoinSecrets, Secrets};

/// Talos' KubePrism port: an in-node load balancer for the Kubernetes API.
pub(crate) const KUBE_PRISM_PORT: u16 = 7445;

/// Talos labels control-plane nodes so cloud load balancers skip them.
const EXCLUDE_FROM_LOAD_BALANCERS: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// `control_plane`: the whole bundle, for a control plane's config only.
pub(crate) fn section(
    node: &Node,
    plan: &NetworkPlan,
    secrets: &JoinSecrets,
    control_plane: Option<&Secrets>,
) -> Value {
    let mut machine = Map::new();
    machine.insert("type".into(), json!(machine_type(node.role)));
    machine.insert("token".into(), json!(secrets.trustd_token));
    machine.insert("ca".into(), os_ca(secrets, control_plane));
    // Talos' API answers at the load balancer too (port 50000), so its
    // certificate names that address; nothing else to add otherwise.
    let sans: Vec<String> = plan
        .load_balancer_ip()
        .map(|ip| ip.to_string())
        .into_iter()
        .collect();
    machine.insert("certSANs".into(), json!(sans));
    machine.insert("kubelet".into(), kubelet(node, plan));
    if node.contract.machine_network_section() {
        machine.insert("network".into(), network::machine_network(node, plan));
    }
    machine.insert("install".into(), install::section(node));
    machine.insert("features".into(), features(node));
    let labels = node_labels(node);
    if !labels.is_empty() {
        machine.insert("nodeLabels".into(), Value::Object(labels));
    }
    if !node.node_taints.is_empty() {
        machine.insert("nodeTaints".into(), json!(node.node_taints));
    }
    Value::Object(machine)
}

fn machine_type(role: Role) -> &'static str {
    match role {
        Role::ControlPlane => "controlplane",
        Role::Worker => "worker",
    }
}

/// Workers get the OS CA's certificate only; Talos writes `key: ""` then.
fn os_ca(secrets: &JoinSecrets, control_plane: Option<&Secrets>) -> Value {
    let key = control_plane.map_or_else(String::new, |all| {
        STANDARD.encode(all.os_ca().key().as_pem())
    });
    json!({"crt": STANDARD.encode(&secrets.os_ca_certificate), "key": key})
}

/// The Hetzner cloud controller manager initialises nodes
/// (`cloud-provider=external`); kubelet serving certificates rotate so they
/// are CA-signed; kubelet may take its node IP only from the node ranges.
fn kubelet(node: &Node, plan: &NetworkPlan) -> Value {
    let valid_subnets: Vec<String> = plan.node_cidrs().iter().map(ToString::to_string).collect();
    json!({
        "image": images::kubelet_image(&node.kubernetes),
        "extraArgs": {
            "cloud-provider": "external",
            "rotate-server-certificates": "true",
        },
        "defaultRuntimeSeccompProfileEnabled": true,
        "nodeIP": {"validSubnets": valid_subnets},
        "disableManifestsDirectory": true,
    })
}

fn features(node: &Node) -> Value {
    let mut features = Map::new();
    if node.contract.legacy_always_on_flags() {
        features.insert("rbac".into(), json!(true));
        features.insert("stableHostname".into(), json!(true));
        features.insert("apidCheckExtKeyUsage".into(), json!(true));
    }
    features.insert("diskQuotaSupport".into(), json!(true));
    features.insert(
        "kubePrism".into(),
        json!({"enabled": true, "port": KUBE_PRISM_PORT}),
    );
    features.insert(
        "hostDNS".into(),
        json!({"enabled": true, "forwardKubeDNSToHost": true, "resolveMemberNames": true}),
    );
    Value::Object(features)
}

fn node_labels(node: &Node) -> Map<String, Value> {
    let mut labels = Map::new();
    if node.role == Role::ControlPlane {
        labels.insert(EXCLUDE_FROM_LOAD_BALANCERS.into(), json!(""));
    }
    for (key, value) in &node.node_labels {
        labels.insert(key.clone(), json!(value));
    }
    labels
}
