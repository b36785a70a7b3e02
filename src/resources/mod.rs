//! Terraform managed resources, one module each.
pub mod cluster;
pub mod common;
pub mod talos_image;
pub mod worker_pool;
