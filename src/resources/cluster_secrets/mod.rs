//! `resource "hct_cluster_secrets"`: a cluster's machine secrets and its
//! cluster-wide settings, made at apply in an instant and without a remote
//! call, and the `worker_join` bundle of both that `hct_cluster` and every
//! `hct_worker_pool` take (the parallel form): the pools no longer wait
//! for the control plane to be applied before they create their servers.
//!
//! - `resource`: its schema, plan and apply.

mod resource;

pub use resource::{ClusterSecretsResource, TYPE_NAME};
