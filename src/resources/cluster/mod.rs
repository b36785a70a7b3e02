//! `hct_cluster`: the control plane of a private Talos cluster, from a bare
//! private network to bootstrapped etcd, and back.
//!
//! - `schema`: attributes and their documentation.
//! - `model`: checks without API calls, and decoding the configuration into
//!   the settings and group spec the cluster runbook works from.
//! - `addons`: the switches of hct's own add-ons.
//! - `kubernetes`: what is done through the Kubernetes API after an apply.
//! - `replacement`: control planes whose servers are gone, and etcd's
//!   quorum, as the plan shows them.
//! - `resource`: plan, apply, read (drift), import; `destroy`: the whole
//!   cluster.
//! - `etcd_backup`: where the etcd snapshot before a risky change goes,
//!   and the plan's refusal when nowhere.
//! - `credentials`: `kubernetes_admin`, the kubeconfig taken apart.
//! - `load_balancer`: `api_load_balancer_id`, the endpoint's load balancer
//!   as refresh found it and apply made it.
//! - `settings_schema` and `settings_plan`: the cluster-wide settings
//!   (what `worker_join` carries) as attributes, their defaults and the
//!   changes they cannot take, shared with `hct_cluster_secrets`; copied
//!   from `worker_join` in the parallel form.

mod addons;
mod credentials;
mod destroy;
mod etcd_backup;
mod kubernetes;
mod load_balancer;
pub(crate) mod model;
mod replacement;
mod resource;
mod schema;
pub(crate) mod settings_plan;
pub(crate) mod settings_schema;

pub use resource::{ClusterResource, TYPE_NAME};

/// The state attribute with the control plane's nodes (the schema's, the
/// plan's and the runbook's inputs read it).
pub const NODES: &str = "control_plane_nodes";
