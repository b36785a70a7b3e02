//! hct: a Terraform provider for private-only Talos Linux Kubernetes
//! clusters on Hetzner Cloud.
//!
//! Where things live:
//! - `network_plan`: the address plan of a private cluster and the plan-time
//!   checks that keep it from half-working (gateway, node ranges, pod CIDR).
//! - `data_sources`, `resources`: the Terraform data sources and managed
//!   resources, one module each.
//! - `hcloud`: the Hetzner Cloud API client.
//! - `talos`: Talos secrets, client configs and machine configs (the default
//!   route is generated in `talos::config::network`).
//! - `talos_api`: the Talos machine API client (apid).
//! - `talos_image`, `talos_release`: Talos images on Hetzner, and releases.
//! - `snapshot`: finding or building the Talos snapshot servers boot from.
//! - `provider`: the provider block and the resource/data-source traits.
//! - `tf`: Terraform's values, types, schemas and diagnostics.
//! - `protocol`: plugin protocol v6 over gRPC and the go-plugin handshake.
//! - `docs`: the registry docs, generated from the schemas.

pub mod cluster;
pub mod der;
pub mod docs;
pub mod duration;
pub mod hcloud;
pub mod logging;
pub mod net;
pub mod network_plan;
pub mod protocol;
pub mod provider;
pub mod resources;
pub mod secret;
pub mod snapshot;
pub mod talos;
pub mod tf;
