//! The private network: the node's only interface gets its address by DHCP
//! and a static default route via the Hetzner network gateway (Hetzner's
//! DHCP hands out the network route only), and the hostname is pinned to
//! the Hetzner server name so the cloud controller manager finds the node.
//! Other interfaces get no config.
//!
//! Hetzner cloud subnets are layer 3: a server's lease is a /32 and the
//! gateway is reachable only through an on-link host route, which DHCP
//! installs. A route via the gateway needs that host route first, so the
//! config carries it too (link scope, no gateway): the default route then
//! holds whatever order DHCP and the static routes come up in. The
//! interface's MTU is Hetzner's documented 1450, not left to DHCP.
//!
//! - Talos v1.11: `machine.network.{hostname,interfaces}` in the v1alpha1
//!   document.
//! - Talos v1.12: those fields left the v1alpha1 schema; Talos 1.12 uses
//!   documents instead: `HostnameConfig` (which Talos itself generates with
//!   `auto: stable`, a name that would override the server name, so ours
//!   sets `hostname`), `LinkConfig` (routes) and `DHCPv4Config`; the
//!   v1alpha1 document keeps an empty `machine.network`, as Talos' own
//!   generator writes it.
//! - Talos v1.13: the same documents; `machine.network` is gone from the
//!   v1alpha1 schema and from Talos' generated configs, so hct leaves it out.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::input::Node;
use crate::network_plan::{NetworkPlan, PRIVATE_NETWORK_MTU};

/// `machine.network` in the v1alpha1 document (up to v1.12).
pub(crate) fn machine_network(node: &Node, plan: &NetworkPlan) -> Value {
    if node.contract.multidoc_network_config() {
        return json!({});
    }
    json!({
        "hostname": node.hostname,
        "interfaces": [{
            "interface": node.interface,
            "mtu": PRIVATE_NETWORK_MTU,
            "routes": [
                gateway_route_v1alpha1(plan.gateway()),
                default_route_v1alpha1(plan.gateway()),
            ],
            "dhcp": true,
        }],
    })
}

/// The network documents that follow the v1alpha1 document (v1.12 on).
pub(crate) fn documents(node: &Node, plan: &NetworkPlan) -> Vec<Value> {
    if !node.contract.multidoc_network_config() {
        return Vec::new();
    }
    vec![
        json!({
            "apiVersion": "v1alpha1",
            "kind": "HostnameConfig",
            "hostname": node.hostname,
        }),
        json!({
            "apiVersion": "v1alpha1",
            "kind": "LinkConfig",
            "name": node.interface,
            "mtu": PRIVATE_NETWORK_MTU,
            "routes": [gateway_route(plan.gateway()), default_route(plan.gateway())],
        }),
        json!({
            "apiVersion": "v1alpha1",
            "kind": "DHCPv4Config",
            "name": node.interface,
        }),
    ]
}

/// The on-link host route to the gateway, v1alpha1 form (no gateway: link
/// scope).
fn gateway_route_v1alpha1(gateway: Ipv4Addr) -> Value {
    json!({"network": format!("{gateway}/32")})
}

/// The on-link host route to the gateway, `LinkConfig` form.
fn gateway_route(gateway: Ipv4Addr) -> Value {
    json!({"destination": format!("{gateway}/32")})
}

/// The default route, v1alpha1 form: `network: 0.0.0.0/0`.
fn default_route_v1alpha1(gateway: Ipv4Addr) -> Value {
    json!({"network": "0.0.0.0/0", "gateway": gateway.to_string()})
}

/// The default route, `LinkConfig` form: no destination. Talos 1.12 makes a
/// default route for the gateway's family and rejects `0.0.0.0/0` as a
/// destination (unspecified address).
fn default_route(gateway: Ipv4Addr) -> Value {
    json!({"gateway": gateway.to_string()})
}
