//! Placement groups of type `spread`: each member on its own host, so at
//! most ten members per group.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind};
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};
use crate::resources::{check_name, checked_labels};
use crate::state::World;

/// Servers a spread group can hold.
pub const SPREAD_GROUP_LIMIT: usize = 10;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlacementGroup {
    pub id: Id,
    pub name: String,
    pub labels: Labels,
    pub created: Timestamp,
}

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
