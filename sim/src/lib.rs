//! hct-sim: a local emulator of the Hetzner Cloud API v1, for testing hct
//! without a Hetzner account.
//!
//! It serves networks, servers, placement groups, images, SSH keys, server
//! types, locations and actions with Hetzner's JSON shapes, error codes,
//! pagination, label selectors, locking and rate limiting; injects faults on
//! demand; and runs a SOCKS5 proxy through which tests reach services that
//! stand in for ports on the servers' private IPs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), hct_sim::SimError> {
//! let sim = hct_sim::Sim::start(hct_sim::SimOptions { seed: true, ..Default::default() }).await?;
//! println!("HCLOUD_ENDPOINT={} HCLOUD_TOKEN={}", sim.endpoint(), sim.token());
//! sim.shutdown().await
//! # }
//! ```

pub mod actions;
pub mod admin;
pub mod api;
pub mod app;
pub mod catalog;
pub mod cli;
pub mod clock;
pub mod durations;
pub mod errors;
pub mod events;
pub mod faults;
pub mod gateway;
pub mod ids;
pub mod kube;
pub mod labels;
pub mod load_balancer_types;
pub mod pagination;
pub mod persist;
pub mod ratelimit;
pub mod requests;
pub mod rescue;
pub mod resources;
pub mod seed;
pub mod sim;
pub mod socks5;
pub mod state;
pub mod talos;

pub use durations::{Durations, Profile};
pub use events::SimEvent;
pub use faults::{ActionFailure, FaultSpec, Respond, RouteFault};
pub use ids::Id;
pub use rescue::{DiskImage, RescueFault};
pub use resources::servers::{BootTarget, TalosNode};
pub use sim::{KubeBinaries, Sim, SimError, SimHandle, SimOptions};
pub use state::World;
pub use talos::TalosFault;
