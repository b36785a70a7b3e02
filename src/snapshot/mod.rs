//! The Talos snapshots servers boot from, and how hct gets one. Hetzner has
//! no Talos image and no import from URL, so hct adopts a snapshot with the
//! same labels when there is one, and otherwise builds it: a temporary
//! server in rescue mode writes the Image Factory's raw image to its disk,
//! and is snapshotted and deleted. Nothing here knows Terraform: the
//! `hct_talos_image` resource decodes its configuration into an
//! [`ImageSpec`] and turns a [`SnapshotError`] into diagnostics.
//!
//! - `spec`: what to build, its defaults and checks, labels, description.
//! - `find`: adopting an existing snapshot (waiting for one another build is
//!   making), reading one, identifying one to import.
//! - `build`: the build, step by step.
//! - `cleanup`: deleting the temporaries, and sweeping expired leftovers.
//! - `lifecycle`: relabelling and deleting a snapshot.
//! - `pipeline`: the command the rescue system runs.
//! - `ssh`: the temporary key and the SSH client.
//! - `error`: [`SnapshotError`], with every message.
//!
//! How hct reaches the builder's SSH ([`Route`]): directly at its public
//! IPv4, or — when the provider has a `talos_proxy` — through that SOCKS5
//! proxy. One proxy setting serves both: the proxies it is meant for
//! (Tailscale's userspace networking, `ssh -D`) also reach public addresses,
//! and hct-sim's proxy leads a rescue server's public IPv4 to its emulated
//! SSH, so the emulator needs no extra setting and no traffic leaves
//! loopback.

pub mod build;
pub mod cleanup;
pub mod error;
pub mod find;
pub mod lifecycle;
mod pipeline;
pub mod spec;
mod ssh;

pub use build::{Outcome, build};
pub use error::SnapshotError;
pub use spec::ImageSpec;
pub use ssh::Route;
