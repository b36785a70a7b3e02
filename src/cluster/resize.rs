//! A new server type for a group: a budget of servers at a time (control
//! planes one), each shut down
//! (ACPI), moved to the type with its disk kept, started again and back in
//! service before the next goes down. Refused before any server goes down
//! when the type's disk is smaller than a server's (disks cannot shrink).

use tracing::info;

use super::ClusterError;
use super::bring_up;
use super::group::Group;
use super::record::NodeRecord;
use crate::hcloud::models::Server;

impl Group<'_> {
    /// Moves `servers` (of this group of `total` nodes, on another type) to
    /// the group's type, a budget of them at a time.
    pub(super) async fn resize(
        &self,
        total: usize,
        servers: &[&Server],
    ) -> Result<(), ClusterError> {
        if servers.is_empty() {
            return Ok(());
        }
        self.check_disks_fit(servers).await?;
        let nodes: Vec<(&Server, NodeRecord)> = servers
            .iter()
            .filter_map(|server| Some((*server, self.recorder.node(&server.name)?)))
            .collect();
        self.rolling(total, nodes, |(server, node)| async move {
            self.change_server_type(server, &node).await
        })
        .await
    }

    /// Disks cannot shrink: refuses the group's server type before any of
    /// `servers` goes down if its disk is smaller than one of theirs.
    async fn check_disks_fit(&self, servers: &[&Server]) -> Result<(), ClusterError> {
        let wanted = self.spec.server_type.as_str();
        let Some(target) = self
            .client
            .server_type(wanted)
            .await
            .map_err(ClusterError::hcloud(format!(
                "reading server type {wanted}"
            )))?
        else {
            return Ok(());
        };
        match servers.iter().find(|s| s.primary_disk_size > target.disk) {
            None => Ok(()),
            Some(server) => Err(ClusterError::Refused {
                summary: "Server type too small",
                detail: format!(
                    "{} cannot become {wanted}: its disk is {} GB and {wanted} has {} GB, and \
                     Hetzner cannot shrink disks. Nothing was changed. Pick a server type with \
                     at least {} GB of disk.",
                    server.name, server.primary_disk_size, target.disk, server.primary_disk_size
                ),
            }),
        }
    }

    /// Moves a node to the group's server type and keeps its server (id, IP,
    /// disk): ACPI shutdown, `change_type` with the disk left at its size
    /// (Hetzner starts the server again afterwards), then back in service.
    /// Whatever fails after the shutdown, the server is powered on again.
    async fn change_server_type(
        &self,
        server: &Server,
        node: &NodeRecord,
    ) -> Result<(), ClusterError> {
        let (client, name) = (self.client, server.name.as_str());
        let wanted = self.spec.server_type.as_str();
        info!(node = name, from = %server.server_type.name, to = wanted, "changing the server type");
        client
            .shut_down(server.id, name, self.deadline.left())
            .await
            .map_err(ClusterError::hcloud(format!("shutting down {name}")))?;
        let doing = format!("changing the server type of {name} to {wanted}");
        let changed = async {
            let action = client.change_type(server.id, wanted, false).await?;
            client
                .wait_for_action(action, &doing, self.deadline.left())
                .await?;
            Ok(())
        }
        .await;
        // Started again by Hetzner after a change; after a failure it is off.
        let powered = self.power_on_if_off(server.id, name).await;
        changed.map_err(ClusterError::hcloud(&doing))?;
        powered?;
        bring_up::back_in_service(self, node).await?;
        info!(
            node = name,
            server_type = wanted,
            "back in service on the new server type"
        );
        Ok(())
    }

    async fn power_on_if_off(&self, server: i64, name: &str) -> Result<(), ClusterError> {
        let doing = format!("powering on {name}");
        let status = self
            .client
            .server(server)
            .await
            .map_err(ClusterError::hcloud(&doing))?
            .map(|s| s.status);
        if status.as_deref() != Some("off") {
            return Ok(());
        }
        // Also after Ctrl-C or the deadline: a node left off is worse than
        // a wait that overruns by one action.
        let action = self
            .client
            .power_on(server)
            .await
            .map_err(ClusterError::hcloud(&doing))?;
        self.client
            .wait_for_action(action, &doing, self.deadline.left())
            .await
            .map_err(ClusterError::hcloud(&doing))?;
        Ok(())
    }
}
