//! The servers in a placement group, and whether it has room for one more.

use super::SPREAD_GROUP_LIMIT;
use crate::errors::ApiError;
use crate::ids::Id;
use crate::state::World;

impl World {
    pub fn placement_group_members(&self, group: Id) -> Vec<Id> {
        self.servers
            .values()
            .filter(|s| s.placement_group == Some(group))
            .map(|s| s.id)
            .collect()
    }

    /// Fails when `group` cannot take one more server.
    pub fn ensure_room_in_group(&self, group: Id) -> Result<(), ApiError> {
        self.placement_group(group)?;
        if self.placement_group_members(group).len() >= SPREAD_GROUP_LIMIT {
            return Err(ApiError::PlacementGroupFull(group));
        }
        Ok(())
    }
}
