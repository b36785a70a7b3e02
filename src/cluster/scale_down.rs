//! Scaling a group down: surplus nodes leave highest index first, each with
//! a graceful Talos reset (it leaves etcd, is cordoned and drained) before
//! its server is deleted. A node that cannot be reached is deleted anyway.

use std::collections::BTreeMap;
use std::time::Duration;

use tracing::{info, warn};

use super::ClusterError;
use super::group::{Desired, Group};
use super::naming;
use crate::hcloud::models::Server;
use crate::talos::api::TalosClient;

/// How long a node may take to leave the cluster gracefully before its
/// server is deleted anyway (an unreachable node must not block scale-down).
const GRACEFUL_RESET_TIMEOUT: Duration = Duration::from_secs(120);

impl Group<'_> {
    /// Scale-down: servers of this group that the plan no longer has go,
    /// highest index first, each leaving the cluster gracefully before its
    /// server is deleted.
    pub(super) async fn scale_down(
        &self,
        desired: &[Desired],
        existing: &mut BTreeMap<String, Server>,
    ) -> Result<(), ClusterError> {
        let mut surplus: Vec<(u32, Server)> = existing
            .values()
            .filter(|s| !desired.iter().any(|d| d.slot.name == s.name))
            .map(|s| {
                let index =
                    naming::node_index(self.cluster(), self.group(), &s.name).unwrap_or(u32::MAX);
                (index, s.clone())
            })
            .collect();
        surplus.sort_by_key(|(index, _)| std::cmp::Reverse(*index));
        for (_, server) in surplus {
            self.remove_node(&server).await?;
            existing.remove(&server.name);
        }
        Ok(())
    }

    /// A graceful Talos reset (leaves etcd, cordons and drains), then the
    /// server's deletion. A node that cannot be reached is deleted anyway.
    async fn remove_node(&self, server: &Server) -> Result<(), ClusterError> {
        if let Some(ip) = server.private_ip(self.settings.network_id) {
            let address = self.address(ip);
            let reset = async {
                let mut client = TalosClient::connect(&address, self.trust).await?;
                client.reset(true).await
            };
            match tokio::time::timeout(GRACEFUL_RESET_TIMEOUT.min(self.deadline.left()), reset)
                .await
            {
                Ok(Ok(())) => info!(node = %server.name, "node reset gracefully"),
                Ok(Err(e)) => {
                    warn!(node = %server.name, "graceful reset failed ({e}); deleting the server anyway")
                }
                Err(_) => {
                    warn!(node = %server.name, "graceful reset timed out; deleting the server anyway")
                }
            }
        }
        self.delete_server(server).await
    }
}
