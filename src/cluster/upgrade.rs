//! Talos upgrades in place, the way `talosctl upgrade` is meant to be used:
//! one node at a time (the caller's order: a group's nodes in index order,
//! the control plane before the worker pools that depend on it), each back
//! on the new release and healthy before the next one goes down.

use tracing::info;

use super::ClusterError;
use super::bring_up;
use super::provision::{Group, NodeRecord};
use super::wait::{self, Retry};
use crate::talos::config::installer_image_for;
use crate::talos_api::{NodeAddress, TalosClient, TalosError};

/// Brings `node` to the group's Talos release if it runs another one.
/// Returns whether it upgraded the node.
pub async fn to_release(group: &Group<'_>, node: &NodeRecord) -> Result<bool, ClusterError> {
    let target = group.settings.talos_version.as_str();
    let address = group.address(&node.ip)?;
    let running = wait::until(
        group.deadline,
        &node.name,
        "checking the Talos release",
        || {
            async {
                match TalosClient::connect(&address, group.trust).await {
                    Ok(mut client) => Ok(Some(client.version().await?.tag)),
                    // No config yet: applying one installs the config's release.
                    Err(TalosError::Maintenance { .. }) => Ok(None),
                    Err(e) => Err(e.into()),
                }
            }
        },
    )
    .await?;
    let Some(running) = running.filter(|r| r != target) else {
        return Ok(false);
    };
    let image = installer_image_for(&group.settings.schematic_id, target);
    info!(node = %node.name, from = %running, to = target, image, "upgrading Talos");
    wait::until(
        group.deadline,
        &node.name,
        "starting the upgrade",
        || async {
            let mut client = TalosClient::connect(&address, group.trust).await?;
            client.upgrade(&image).await?;
            Ok(())
        },
    )
    .await?;
    // The node keeps answering on the old release for a moment, then goes
    // down to install the new one and reboots into it.
    wait::until(
        group.deadline,
        &node.name,
        &format!("waiting for Talos {target} after the upgrade"),
        || async {
            match release(group, &address).await? {
                now if now == target => Ok(()),
                now => Err(Retry::Again(format!("still runs {now}"))),
            }
        },
    )
    .await?;
    bring_up::back_in_service(group, node).await?;
    info!(node = %node.name, release = target, "upgraded");
    Ok(true)
}

/// The release the node runs (its Version tag).
async fn release(group: &Group<'_>, address: &NodeAddress) -> Result<String, Retry> {
    let mut client = TalosClient::connect(address, group.trust).await?;
    Ok(client.version().await?.tag)
}
