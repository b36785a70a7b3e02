//! `hct_talos_image`: the resource that finds or builds the Talos snapshot a
//! cluster boots from, and the data source that looks one up. The finding
//! and building itself is `crate::snapshot`'s; this is the Terraform side.
//!
//! - `resource`: the resource's schema, validate, plan, apply, read, import.
//! - `model`: its attributes, decoded once per request into typed fields
//!   and an `ImageSpec`, checked, and encoded back.
//! - `field`: one typed attribute (null, unknown or known) on the wire.
//! - `diagnostics`: the snapshot runbook's errors as diagnostics.
//! - `data_source`: `data "hct_talos_image"`.

pub mod data_source;
mod diagnostics;
mod field;
mod model;
mod resource;

pub use resource::{TYPE_NAME, TalosImageResource};

#[cfg(test)]
mod tests;
