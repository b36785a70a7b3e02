//! A group's spread placement groups: Hetzner puts at most 10 servers in
//! one, so node n sits in group ⌈n / 10⌉ (`<cluster>-<group>-spread-<k>`).
//! Created before the servers that need them, deleted once empty.

use std::collections::BTreeMap;

use tracing::info;

use super::ClusterError;
use super::group::Group;
use super::naming;
use super::slots;
use crate::network_plan::MAX_SERVERS_PER_NETWORK;

impl Group<'_> {
    /// This group's placement groups by number.
    pub(super) async fn placement_groups(&self) -> Result<BTreeMap<u32, i64>, ClusterError> {
        let groups = self
            .client
            .placement_groups(&naming::group_selector(self.cluster(), self.group()))
            .await
            .map_err(ClusterError::hcloud("listing placement groups"))?;
        Ok(groups
            .into_iter()
            .filter_map(|g| {
                let k = (1..=slots::placement_groups_for(MAX_SERVERS_PER_NETWORK)).find(|k| {
                    naming::placement_group_name(self.cluster(), self.group(), *k) == g.name
                })?;
                Some((k, g.id))
            })
            .collect())
    }

    /// Placement groups 1..=count, created where missing.
    pub(super) async fn ensure_placement_groups(
        &self,
        count: u32,
    ) -> Result<BTreeMap<u32, i64>, ClusterError> {
        let mut groups = self.placement_groups().await?;
        for k in 1..=count {
            if groups.contains_key(&k) {
                continue;
            }
            let name = naming::placement_group_name(self.cluster(), self.group(), k);
            info!(placement_group = %name, "creating spread placement group");
            let group = self
                .client
                .create_spread_group(&name, &naming::group_labels(self.cluster(), self.group()))
                .await
                .map_err(ClusterError::hcloud(format!(
                    "creating placement group {name}"
                )))?;
            groups.insert(k, group.id);
        }
        Ok(groups)
    }

    /// Deletes placement groups numbered above `keep` (empty after scale-down).
    pub(super) async fn remove_spare_placement_groups(
        &self,
        groups: &BTreeMap<u32, i64>,
        keep: u32,
    ) -> Result<(), ClusterError> {
        for (k, id) in groups.range(keep + 1..) {
            info!(placement_group = k, id, "deleting placement group");
            self.client
                .delete_placement_group(*id)
                .await
                .map_err(ClusterError::hcloud("deleting a placement group"))?;
        }
        Ok(())
    }

    /// The ids of the group's placement groups, in order.
    pub async fn placement_group_ids(&self) -> Result<Vec<i64>, ClusterError> {
        Ok(self.placement_groups().await?.into_values().collect())
    }
}
