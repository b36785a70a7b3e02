//! What ServiceList reports: apid, kubelet and (on control planes) etcd,
//! healthy only when the node can pull their images and etcd has formed.

use super::config::MachineConfig;
use super::lifecycle;
use super::node::NodeState;
use crate::resources::servers::Server;
use crate::state::World;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStatus {
    pub id: &'static str,
    pub state: &'static str,
    pub healthy: bool,
    pub message: String,
}

impl ServiceStatus {
    fn running(id: &'static str) -> Self {
        Self {
            id,
            state: "Running",
            healthy: true,
            message: "Health check successful".into(),
        }
    }

    fn preparing(id: &'static str, message: String) -> Self {
        Self {
            id,
            state: "Preparing",
            healthy: false,
            message,
        }
    }
}

/// The services of a configured node.
pub fn of(
    world: &World,
    server: &Server,
    node: &NodeState,
    config: &MachineConfig,
) -> Vec<ServiceStatus> {
    let egress = lifecycle::egress(world, server, config);
    let pulls = |id: &'static str| match &egress {
        Ok(_) => ServiceStatus::running(id),
        Err(e) => ServiceStatus::preparing(id, format!("failed to pull the {id} image: {e}")),
    };
    let mut services = vec![ServiceStatus::running("apid"), pulls("kubelet")];
    if config.is_control_plane() {
        let etcd = match (&egress, &node.disk.etcd.member) {
            (Err(_), _) | (Ok(_), Some(_)) => pulls("etcd"),
            (Ok(_), None) => ServiceStatus::preparing(
                "etcd",
                "waiting for bootstrap or a running member to join".into(),
            ),
        };
        services.push(etcd);
    }
    services
}
