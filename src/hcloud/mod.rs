//! A client for the Hetzner Cloud API v1: typed models, retries that ride out
//! rate limits and transient failures, one request budget per provider, and
//! batched, adaptive waiting for actions.
//!
//! `client` is the HTTP core; each resource family has its own module.

mod actions;
mod client;
pub mod error;
pub mod labels;
pub mod models;
mod ratelimit;
mod watcher;

mod catalog;
mod images;
mod load_balancers;
mod networks;
mod placement_groups;
mod private_server;
mod servers;
mod ssh_keys;

pub use client::{Client, ClientConfig};
pub use error::{ApiError, HcloudError};
pub use labels::LabelSelector;
pub use private_server::{CreateStep, PrivateServer, StepFailed};
pub use servers::{BuilderServer, CreatedServer};
