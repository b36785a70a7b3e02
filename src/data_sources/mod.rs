//! Terraform data sources, one module each.

pub mod network_plan;
pub mod talos_image;
