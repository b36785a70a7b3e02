//! The resources of a project: their state, their rules, their API shape.
//! Each resource is a folder: its `mod.rs` holds the records (data only, so
//! that the world in `state` can hold them without depending on what is done
//! with them), the other files its requests and views (`impl World`). Each
//! resource's module also holds what its actions do when they end;
//! `completions` sends every finished or failed action there.

mod completions;
pub mod firewalls;
pub mod images;
pub mod load_balancers;
pub mod networks;
pub mod placement_groups;
pub mod primary_ips;
pub mod servers;
pub mod ssh_keys;

use crate::errors::ApiError;
use crate::labels::{Labels, validate_labels};

/// Labels from a request, checked against the label grammar.
pub fn checked_labels(labels: Labels) -> Result<Labels, ApiError> {
    validate_labels(&labels).map_err(|message| ApiError::field("labels", message))?;
    Ok(labels)
}

/// Names of servers follow RFC 1123 host names; other resources only need
/// a non-empty name of sane length.
pub fn check_name(name: &str) -> Result<(), ApiError> {
    if name.trim().is_empty() || name.len() > 128 {
        return Err(ApiError::field("name", "must be 1 to 128 characters long"));
    }
    Ok(())
}
