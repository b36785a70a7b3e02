//! The lifecycle `hct_cluster` and `hct_worker_pool` share: each manages
//! one group of nodes (the control plane, or a pool) and records it in
//! state the same way. What differs (where the settings come from, the
//! client configs, the pool's placement-group ids) stays in the resources.
//!
//! - plan: the node list with each node's server and config hash
//!   ([`plan_nodes`]), and preflight when servers are added or resized;
//! - apply: converge the servers and bring the nodes up ([`converge`]), or
//!   remove them all ([`remove_all`]);
//! - read: the servers that still exist, their configs read back, label and
//!   server-type drift ([`refresh`]);
//! - import: the group's servers by hct's labels ([`import`]).
//!
//! [`NodeGroupResource`] is the Terraform resource made of these steps; a
//! [`GroupKind`] supplies what is its own.
//!
//! - `state`: the node list in state; `steps`: plan and apply's steps;
//!   `read`: refresh and import; `resource`: the resource made of them.

mod read;
pub mod ready;
mod resource;
mod state;
mod steps;

pub use read::{Imported, Recorded, Refreshed, import, refresh};
pub use resource::{GroupKind, NodeGroupResource, Prepared, StateGroup};
pub use state::{NODE_LIST_DESCRIPTION, node_list_type, nodes_from, nodes_value};
pub use steps::{Outcome, Run, Target, converge, group_spec, plan_nodes, preflight, remove_all};
