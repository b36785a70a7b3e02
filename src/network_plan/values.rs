//! Helm values for the network add-ons, derived from the plan so they cannot
//! drift from the addresses Talos and Hetzner are configured with.

use serde_json::{Value, json};

use super::NetworkPlan;

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
            "autoDirectNodeRoutes": true,
            // Between datacenters the network is L3 only: Cilium skips the
            // direct routes it cannot install there and pod traffic follows
            // the Hetzner routes instead.
            "directRoutingSkipUnreachable": self.multi_datacenter(),
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
