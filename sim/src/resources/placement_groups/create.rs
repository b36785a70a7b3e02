//! Creating a placement group, renaming or relabelling it, and deleting it
//! (which releases its servers).

use super::PlacementGroup;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind};
use crate::labels::Labels;
use crate::resources::{check_name, checked_labels};
use crate::state::World;

impl World {
    pub fn create_placement_group(
        &mut self,
        name: String,
        kind: &str,
        labels: Labels,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        check_name(&name)?;
        if kind != "spread" {
            return Err(ApiError::field("type", "must be 'spread'"));
        }
        let labels = checked_labels(labels)?;
        if self.placement_groups.values().any(|g| g.name == name) {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        let id = self.next_id(Some(ResourceKind::PlacementGroup));
        self.placement_groups.insert(
            id,
            PlacementGroup {
                id,
                name,
                labels,
                created: now,
            },
        );
        Ok(id)
    }

    pub fn update_placement_group(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
    ) -> Result<(), ApiError> {
        self.placement_group(id)?;
        if let Some(name) = &name {
            check_name(name)?;
            if self
                .placement_groups
                .values()
                .any(|g| g.id != id && &g.name == name)
            {
                return Err(ApiError::Uniqueness { field: "name" });
            }
        }
        let labels = labels.map(checked_labels).transpose()?;
        let group = self.placement_group_mut(id)?;
        if let Some(name) = name {
            group.name = name;
        }
        if let Some(labels) = labels {
            group.labels = labels;
        }
        Ok(())
    }

    /// Deleting a group releases its servers from it.
    pub fn delete_placement_group(&mut self, id: Id) -> Result<(), ApiError> {
        self.placement_groups
            .remove(&id)
            .ok_or_else(|| ApiError::not_found("placement_group", id))?;
        for server in self.servers.values_mut() {
            if server.placement_group == Some(id) {
                server.placement_group = None;
            }
        }
        Ok(())
    }
}
