//! Emulated Talos Linux nodes. A server created from an image whose disk
//! holds Talos (a snapshot of a disk a rescue system wrote, or a seeded one)
//! runs the release on that disk, with an emulated apid (the Talos API on
//! port 50000) while it is up, reachable at its private IPs through the
//! SOCKS5 proxy:
//!
//! - booted without a config it is in maintenance mode (self-signed
//!   certificate, no client certificate asked) and takes ApplyConfiguration,
//!   after which it installs, reboots and comes back configured; a config
//!   in user data configures it at boot;
//! - configured, it speaks mutual TLS with the cluster's OS CA (workers get
//!   their certificate from trustd on a control plane), bootstraps etcd
//!   once per cluster, lists etcd members, takes etcd snapshots
//!   (`etcd_snapshot`) and recovers etcd from one (`etcd_recover`), hands
//!   out the admin kubeconfig, and reboots, upgrades and resets;
//! - its health follows its network: without a default route via the
//!   network's gateway it cannot pull images and never becomes healthy;
//! - a control plane whose etcd member runs also serves the Kubernetes
//!   API's health endpoints (`/readyz`, `/livez`) on port 6443.
//!
//! Module map: `config` reads machine configs and `user_data` finds them
//! in Hetzner's user data; `node` is a node's state and `lifecycle` moves it
//! on with time; `cluster` is what nodes of one cluster know of each other;
//! `calls` carries out the API calls, which `service` serves over gRPC from
//! an `apid` per node that `supervisor` starts and stops (`call_log`
//! records every call it takes), along with a
//! `kube_api` per control plane whose etcd runs; `tls`, `auth` and `pki`
//! are its certificates and roles; `faults` injects trouble (`reinstall`: a server reinstalled behind hct's back); `sample` makes
//! secrets, configs and client certificates for tests. `manifests` renders
//! the bootstrap manifests a control plane's config makes, which `cosi`
//! lists over the COSI state API beside the machine API.

pub mod apid;
pub mod auth;
pub mod call_log;
pub mod calls;
pub mod cluster;
pub mod config;
pub mod cosi;
pub mod etcd;
pub mod etcd_recover;
pub mod etcd_snapshot;
pub mod faults;
pub mod kube_api;
pub mod kube_control_plane;
pub mod kubeconfig;
pub mod lifecycle;
pub mod manifests;
pub mod network;
pub mod node;
pub mod pb;
pub mod pki;
pub mod ports;
pub mod reinstall;
pub mod sample;
pub mod secret;
pub mod service;
pub mod services;
pub mod supervisor;
pub mod tls;
pub mod user_data;
pub mod version;

pub use faults::TalosFault;
pub use node::NodeState;

#[cfg(test)]
mod testing;
