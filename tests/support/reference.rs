//! The shipped reference example, `examples/private-cluster`, in a workspace
//! pointed at a seeded hct-sim, and reading its state back.

use hct_sim::SimHandle;

use super::Workspace;

pub const EXAMPLE: &str = include_str!("../../examples/private-cluster/main.tf");

/// A CNI as hct-sim sees one (a DaemonSet named cilium, and its
/// ConfigMap); it runs nothing, the emulated nodes turn Ready.
pub const CNI_MANIFEST: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cilium
  namespace: kube-system
  labels:
    k8s-app: cilium
spec:
  selector:
    matchLabels:
      k8s-app: cilium
  template:
    metadata:
      labels:
        k8s-app: cilium
    spec:
      containers:
        - name: cilium-agent
          image: quay.io/cilium/cilium:v1.18.4
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cilium-config
  namespace: kube-system
data:
  ipam: kubernetes
  tunnel: disabled
";

/// The reference layout with `general` nodes in the general pool.
pub fn pools(general: u32) -> String {
    pools_labelled(general, r#"{ purpose = "platform" }"#)
}

pub fn pools_labelled(general: u32, platform_labels: &str) -> String {
    format!(
        r#"worker_pools = {{
  platform = {{ cidr = "10.0.128.32/27", nodes = 3, sku = "cx33", labels = {platform_labels} }}
  general  = {{ cidr = "10.0.128.64/27", nodes = {general}, sku = "cx23", labels = {{ purpose = "general" }} }}
}}
"#
    )
}

/// The example with three nodes per pool and the first control plane as the
/// API endpoint, on the sim's seeded network, with the provider polling
/// fast.
pub fn workspace(sim: &SimHandle) -> Workspace {
    let mut ws = Workspace::dev_override(&[("main.tf", EXAMPLE)]);
    ws.write("pools.auto.tfvars", &pools(3));
    // The example's default is the load balancer; the suites built on this
    // workspace test the other mode, and tests/e2e/endpoint_e2e.rs this one.
    ws.write(
        "endpoint.auto.tfvars",
        "api_endpoint = \"first_control_plane\"\n",
    );
    ws.write(
        "network.auto.tfvars",
        &format!("network_id = {}\n", super::sim::seeded_network(sim)),
    );
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token())
        .env("HCT_TALOS_PROXY", sim.proxy_url())
        .env("HCT_POLL_INTERVAL", "50ms");
    ws
}

/// A resource's values in state, from `terraform show -json` (sensitive
/// ones included).
pub fn resource_values(ws: &Workspace, address: &str) -> serde_json::Value {
    let out = ws
        .terraform(&["show", "-json"])
        .expect_success("show -json");
    let state: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    state["values"]["root_module"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["address"] == address)
        .map(|r| r["values"].clone())
        .unwrap_or_default()
}

pub fn state_attribute(ws: &Workspace, address: &str, name: &str) -> String {
    resource_values(ws, address)[name]
        .as_str()
        .unwrap_or_else(|| panic!("{address}.{name} not in state"))
        .to_string()
}
