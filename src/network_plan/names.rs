//! Names and ports that the plan, the configs and the cluster runbook agree
//! on (one home each).

/// The Kubernetes API server's port on the control-plane nodes.
pub const KUBE_API_PORT: u16 = 6443;
/// Talos' API (apid) on every node.
pub const TALOS_API_PORT: u16 = 50000;

/// The control plane's name in server names (`<cluster>-cp-<n>`) and
/// placement groups; no worker pool may take it.
pub const CONTROL_PLANE_GROUP: &str = "cp";
