//! Helm values for the network add-ons, derived from the plan so they cannot
//! drift from the addresses Talos and Hetzner are configured with.

use serde_json::{Value, json};

use super::NetworkPlan;
use super::hetzner::HETZNER_METADATA;
use super::names::TALOS_API_PORT;

/// KubePrism: Talos's node-local load balancer for the Kubernetes API. Cilium
/// replaces kube-proxy, so it must reach the API without a service IP.
const KUBEPRISM_PORT: u16 = 7445;

/// Capabilities Cilium's agent needs; Talos does not grant the chart's
/// defaults (e.g. SYS_MODULE, since Talos forbids loading kernel modules).
const CILIUM_AGENT_CAPABILITIES: [&str; 11] = [
    "CHOWN",
    "KILL",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "SYS_ADMIN",
    "SYS_RESOURCE",
    "DAC_OVERRIDE",
    "FOWNER",
    "SETGID",
    "SETUID",
];

const CILIUM_CLEAN_STATE_CAPABILITIES: [&str; 3] = ["NET_ADMIN", "SYS_ADMIN", "SYS_RESOURCE"];

impl NetworkPlan {
    /// Cilium with native routing over the Hetzner network.
    pub fn cilium_values(&self) -> Value {
        json!({
            "routingMode": "native",
            // The pod CIDR only: traffic to anything else, nodes included, is
            // masqueraded, which Hetzner's anti-spoofing requires.
            "ipv4NativeRoutingCIDR": self.native_routing_cidr().to_string(),
            // Hetzner documents cloud subnets as layer 3: every packet goes
            // through the network's gateway, and a server's lease is a /32
            // with an on-link route to the gateway only ("Networks:
            // technical concepts / architecture"). Direct routes to other
            // nodes are then unreachable and skipped, and pod traffic follows
            // the routes the cloud controller manager adds to the network.
            // Were nodes ever on one link (a vSwitch subnet is layer 2), the
            // direct routes would be used: right in both cases, in one
            // location or several.
            "autoDirectNodeRoutes": true,
            "directRoutingSkipUnreachable": true,
            "kubeProxyReplacement": true,
            // Pod ranges come from Kubernetes (node.spec.podCIDR), the same
            // ranges the Hetzner cloud controller manager routes.
            "ipam": { "mode": "kubernetes" },
            "k8sServiceHost": "localhost",
            "k8sServicePort": KUBEPRISM_PORT,
            // Talos mounts cgroup v2 itself.
            "cgroup": {
                "autoMount": { "enabled": false },
                "hostRoot": "/sys/fs/cgroup",
            },
            "securityContext": {
                "capabilities": {
                    "ciliumAgent": CILIUM_AGENT_CAPABILITIES,
                    "cleanCiliumState": CILIUM_CLEAN_STATE_CAPABILITIES,
                },
            },
        })
    }

    /// A Cilium cluster-wide policy that keeps pods from Hetzner's
    /// metadata service (which serves user data, and so a config delivered
    /// as `user_data`). It selects Cilium endpoints only: host-network pods
    /// such as the Hetzner CCM and CSI node plugin, which read metadata, are
    /// not endpoints and keep it. Deny rules only, with default deny off, so
    /// the policy allows everything else as before.
    pub fn cilium_metadata_policy(&self) -> Value {
        let talos_api = json!([{
            "ports": [{ "port": TALOS_API_PORT.to_string(), "protocol": "TCP" }],
        }]);
        json!({
            "apiVersion": "cilium.io/v2",
            "kind": "CiliumClusterwideNetworkPolicy",
            "metadata": { "name": "block-hetzner-metadata" },
            "spec": {
                "description": "Pods may not read Hetzner's metadata service (server user \
                    data), nor reach the nodes' Talos API, which takes a config from anyone \
                    while a node is in maintenance mode.",
                "endpointSelector": {},
                "enableDefaultDeny": { "egress": false, "ingress": false },
                "egressDeny": [
                    { "toCIDR": [format!("{HETZNER_METADATA}/32")] },
                    // Nodes running Cilium are entities, not CIDRs; a node
                    // without it yet (a new one, in maintenance mode) is
                    // `world`, matched by its range.
                    { "toEntities": ["host", "remote-node"], "toPorts": talos_api.clone() },
                    { "toCIDR": [self.node_subnet().to_string()], "toPorts": talos_api },
                ],
            },
        })
    }

    /// The Hetzner cloud controller manager, routing each node's pod range
    /// through the Hetzner network.
    pub fn hccm_values(&self) -> Value {
        json!({
            "networking": {
                "enabled": true,
                "clusterCIDR": self.pod_cidr().to_string(),
            },
        })
    }
}
