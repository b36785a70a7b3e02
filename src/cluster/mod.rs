//! Building and running the nodes of a private Talos cluster on Hetzner:
//! the logic behind `hct_cluster` and `hct_worker_pool`, on typed inputs
//! rather than Terraform values, so it reads as the runbook it automates.
//!
//! Where things live:
//! - `apply`: the entry points of a group's apply and removal, which run
//!   the steps below in order (the one place the sequence is written);
//!   `read`: the entry point of a group's refresh and import.
//! - `addons`: hct's own manifests (the kubelet-serving CSR approver, the
//!   `hcloud` Secret), rendered from the plan.
//! - `naming`: server and placement-group names, and the labels that mark
//!   what hct owns (how reruns adopt instead of duplicating).
//! - `slots`: which nodes a group should have, from the network plan.
//! - `settings`: the cluster-wide inputs every node's config is made from,
//!   and the worker-join bundle that carries them to worker pools.
//! - `preflight`: checks against Hetzner before anything is created.
//! - `group`: one group of servers (the control plane or a pool) and what
//!   its operations share; `record`: the nodes as state records them.
//! - `leftovers`: servers with a group's labels that state does not know
//!   (adopted, deleted only when provably empty, else refused);
//! - `converge`: make a group's servers match the plan (create, adopt,
//!   re-apply configs); `scale_down`, `resize` and `placement`
//!   (spread placement groups) are its steps.
//! - `endpoint`: the private API load balancer of `api_endpoint =
//!   "load_balancer"`.
//! - `teardown`: destroying a whole cluster.
//! - `bring_up`: Talos after the servers run: etcd, kubelet, and the
//!   Kubernetes API's `/readyz` (`kube_api`); `bootstrap`: etcd
//!   bootstrapped exactly once in a cluster's life, decided from the
//!   cluster (`EtcdRecord`: what state remembers of it), from a snapshot
//!   with `restore_from`.
//! - `kubernetes_sync`: the entry for what `hct_cluster` does through the
//!   Kubernetes API after its nodes' apply (manifests, add-ons, `ready`:
//!   the wait for Ready nodes once a CNI runs, which a pool's apply ends
//!   with too).
//! - `running_config`: the configs nodes run, read back at refresh (drift)
//!   by `read`.
//! - `upgrade`: Talos upgrades in place, one node at a time;
//!   `kubernetes_upgrade`: Kubernetes upgrades like `talosctl upgrade-k8s`
//!   (control-plane components node by node, then the kubelets), ending
//!   as it does with `talos_manifests`: the manifests Talos renders itself
//!   (CoreDNS, kube-proxy) applied again for the release.
//! - `control_plane`: a pool's waits on its control plane (until it can
//!   take the pool's nodes; until it runs a release), which also catch a
//!   `worker_join` that is not the cluster's.
//! - `pre_change`: the etcd snapshot before a change that puts running
//!   control planes at risk (upgrades, new configs, scale-down, resize),
//!   or the refusal when there is nowhere to put it; `etcd_snapshot`:
//!   taking one and keeping it, then and on demand (the
//!   `hct_etcd_snapshot` action); `secrets_backup`: the machine secrets
//!   kept beside the snapshots.
//! - `budget`: how many nodes of a group may be out at once while it
//!   changes (`max_unavailable`); `rolling`: changing nodes within it, and
//!   the cluster-wide limit across pools.
//! - `this_run`: what this process knows of each cluster in the running
//!   apply (its pools' nodes out of service, a failed control plane).
//! - `wait`: retrying with progress logs, timeouts and Ctrl-C.
//! - `error`: what can go wrong, as diagnostics that say what to do.

pub mod addons;
pub mod apply;
pub mod bootstrap;
pub mod bring_up;
pub mod budget;
pub mod control_plane;
mod converge;
pub mod endpoint;
pub mod error;
pub mod etcd_snapshot;
pub mod group;
pub mod kube_api;
pub mod kubernetes_sync;
pub mod kubernetes_upgrade;
pub mod leftovers;
pub mod naming;
mod placement;
pub mod pool_access;
pub mod pre_change;
pub mod preflight;
pub mod read;
pub mod ready;
pub mod record;
mod resize;
mod rolling;
pub mod running_config;
mod scale_down;
mod secrets_backup;
pub mod settings;
pub mod slots;
pub mod talos_manifests;
pub mod teardown;
pub mod this_run;
pub mod upgrade;
pub mod wait;

pub use error::ClusterError;
pub use group::{Group, GroupSpec};
pub use record::{NodeRecord, Recorder};
pub use settings::{ClusterSettings, ConfigDelivery, WorkerJoin};
pub use slots::NodeSlot;
