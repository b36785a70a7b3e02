//! What the API shows of a placement group: its JSON, with its members.

use serde_json::{Value, json};

use super::PlacementGroup;
use crate::state::World;

impl PlacementGroup {
    pub fn to_api(&self, world: &World) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "labels": self.labels,
            "type": "spread",
            "servers": world.placement_group_members(self.id),
            "created": self.created.rfc3339(),
        })
    }
}
