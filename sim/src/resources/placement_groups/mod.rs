//! Placement groups of type `spread`: each member on its own host, so at
//! most ten members per group. This file holds the record only; the rest is
//! in the file named after it:
//!
//! - `create`: creating, renaming or relabelling and deleting a group;
//! - `members`: the servers in a group and whether it has room for one more;
//! - `view`: the group as the API shows it.
//!
//! Servers join and leave groups by their own requests, in
//! `servers::attachments`.

mod create;
mod members;
mod view;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};

/// Servers a spread group can hold.
pub const SPREAD_GROUP_LIMIT: usize = 10;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlacementGroup {
    pub id: Id,
    pub name: String,
    pub labels: Labels,
    pub created: Timestamp,
}

impl Sortable for PlacementGroup {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "name" => SortKey::Text(self.name.clone()),
            "created" => SortKey::Int(self.created.millis() as i64),
            _ => SortKey::Int(self.id),
        }
    }
}
