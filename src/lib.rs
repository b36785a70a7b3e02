//! hct: a Terraform provider for private-only Talos Linux Kubernetes
//! clusters on Hetzner Cloud.
//!
//! Where things live, from the wire down to the leaves (arrows point one
//! way: no file imports a file that imports it back, which
//! `scripts/check-structure` checks):
//! - `protocol`: plugin protocol v6 over gRPC, the go-plugin handshake and
//!   AutoMTLS; turns Terraform's RPCs into calls on `provider`'s traits.
//! - `provider`: the provider block, the resource and data-source traits,
//!   and the per-call `Context` (Hetzner client, `talos_proxy`, Ctrl-C).
//! - `resources`: the data sources and managed resources, one module each,
//!   and the list hct serves (`resources::provider`); `resources::node_group`
//!   is the lifecycle the cluster and pool resources share.
//! - `cluster`: the cluster runbook on typed inputs (no Terraform values;
//!   it reports through diagnostics): naming and
//!   labels, preflight, one group of servers (`group`, `converge`,
//!   `scale_down`, `resize`, `placement`), Talos bring-up, upgrades, waits.
//! - `snapshot`: the Talos snapshot runbook (rescue system, write, snapshot).
//! - `backup`: etcd snapshots as hct keeps them (checked, age-encrypted,
//!   written under their names).
//! - `hcloud`: the Hetzner Cloud API client; `talos::api`: the Talos machine
//!   API client (apid).
//! - `talos`: Talos knowledge without I/O: releases (`talos::release`, the
//!   one version type), machine configs (the default route is made in
//!   `talos::config::network`), secrets, PKI, client configs, images and
//!   the installer image (`talos::image`).
//! - `network_plan`: the address plan and its plan-time checks; it owns the
//!   group name, ports and Hetzner's limits.
//! - leaves: `net` (SOCKS5 dialing), `secret` (values never printed),
//!   `build_info` (version, source address), `tf`
//!   (Terraform values, schemas, diagnostics), `pace` (the poll interval and
//!   the retry waits derived from it), `duration`, `der`, `logging`.
//! - `docs`: the registry docs, generated from the schemas.

pub mod backup;
pub mod build_info;
pub mod cluster;
pub mod der;
pub mod docs;
pub mod duration;
pub mod hcloud;
pub mod logging;
pub mod net;
pub mod network_plan;
pub mod pace;
pub mod protocol;
pub mod provider;
pub mod resources;
pub mod secret;
pub mod snapshot;
pub mod talos;
pub mod tf;
