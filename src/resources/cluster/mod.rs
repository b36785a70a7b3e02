//! `hct_cluster`: the control plane of a private Talos cluster, from a bare
//! private network to bootstrapped etcd, and back.
//!
//! - `schema`: attributes and their documentation.
//! - `model`: checks without API calls, and decoding the configuration into
//!   the settings and group spec the cluster runbook works from.
//! - `resource`: plan, apply, read (drift), import, destroy.

mod kubernetes;
mod model;
mod resource;
mod schema;

pub use resource::{ClusterResource, TYPE_NAME};
