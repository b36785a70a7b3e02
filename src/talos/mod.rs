//! Talos Linux: what hct knows of it (releases, images, machine configs,
//! secrets and client configs, without I/O) and its machine API client.
//!
//! Where things live:
//! - `release`: the one Talos version type, and releases' known problems.
//! - `image`: schematics, Image Factory addresses, the installer image,
//!   and the labels of hct's snapshots.
//! - `api`: the Talos machine API client (apid), the only I/O here.
//! - `secrets`: the secrets bundle and talosctl's `secrets.yaml`.
//! - `pki`: the CAs, client certificates and private key formats.
//! - `client_config`: talosconfig and the offline admin kubeconfig.
//! - `config`: machine configs, user patches and Hetzner user data.
//! - `yaml`: YAML in and out.

pub mod api;
pub mod client_config;
pub mod config;
pub mod image;
pub mod pki;
pub mod release;
pub mod secrets;
pub(crate) mod yaml;

#[cfg(test)]
mod benchmark;
#[cfg(test)]
pub(crate) mod testing;

pub use config::{ConfigError, MachineConfig, NodeConfigInput, Role, generate, user_data};
pub use secrets::{JoinSecrets, NodeSecrets, Secrets, SecretsError};
pub use yaml::YamlError;
