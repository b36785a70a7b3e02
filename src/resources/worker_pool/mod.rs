//! `hct_worker_pool`: one pool of private Talos workers joined to an
//! `hct_cluster` through its `worker_join`. The pool's CIDR and node count
//! come from the network plan; scaling is a change of the plan's `nodes`
//! (new nodes take the next IPs; removed ones go highest index first, each
//! reset gracefully before its server is deleted: `cluster::scale_down`).
//!
//! - `schema`: attributes and their documentation.
//! - `model`: checks without API calls, and decoding the configuration.
//! - `resource`: plan, apply, read (drift), import, destroy.

mod model;
mod resource;
mod schema;

pub use resource::{TYPE_NAME, WorkerPoolResource};
