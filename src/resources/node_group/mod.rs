//! The lifecycle `hct_cluster` and `hct_worker_pool` share: each manages
//! one group of nodes (the control plane, or a pool) and records it in
//! state the same way. What differs (where the settings come from, the
//! client configs, the pool's placement-group ids) stays in the resources.
//!
//! - plan: the node list with each node's server and config hash
//!   ([`plan_nodes`]), and preflight when servers are added or resized;
//! - apply: the runbook's `cluster::apply` (converge the servers, bring the
//!   nodes up), with the clients of [`clients`] and what state records of
//!   etcd (`private`);
//! - read: the runbook's `cluster::read` (the servers that still exist,
//!   their configs read back, label and server-type drift), with its
//!   warning made here ([`refresh`]);
//! - import: the group's servers by hct's labels ([`import`]).
//!
//! [`NodeGroupResource`] is the Terraform resource made of these steps; a
//! [`GroupKind`] supplies what is its own.
//!
//! - `state`: the node list in state; `private`: what state keeps hidden
//!   (etcd bootstrapped); `plan`: the node list and the clients; `read`:
//!   refresh and import; `resource`: the resource made of them.

mod plan;
mod private;
mod read;
mod resource;
mod state;

pub use crate::cluster::read::{Imported, Recorded, Refreshed};
pub use plan::{clients, group_spec, plan_nodes, strangers};
pub use private::{etcd_record, with_etcd_record};
pub use read::{import, refresh};
pub use resource::{GroupKind, NodeGroupResource, Prepared, StateGroup};
pub use state::{NODE_LIST_DESCRIPTION, node_list_type, nodes_from, nodes_value};
