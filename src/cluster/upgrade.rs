//! Talos upgrades in place, the way `talosctl upgrade` is meant to be used:
//! one node at a time (the caller's order: a group's nodes in index order,
//! the control plane before the worker pools that depend on it), each back
//! on the new release and healthy before the next one goes down.

use tracing::{info, warn};

use super::ClusterError;
use super::bring_up;
use super::group::Group;
use super::record::NodeRecord;
use super::wait::{self, Retry};
use crate::talos::api::{NodeAddress, TalosClient, TalosError};
use crate::talos::image::{self, DEFAULT_FACTORY_URL};
use crate::talos::release::TalosVersion;

/// Brings `node` to the group's Talos release if it runs another one.
/// Returns whether it upgraded the node. A node on a newer release is an
/// error: hct does not downgrade.
pub async fn to_release(group: &Group<'_>, node: &NodeRecord) -> Result<bool, ClusterError> {
    let target = &group.settings.talos_version;
    let address = group.address(node.ip);
    let running = wait::until(
        group.deadline,
        &node.name,
        "checking the Talos release",
        || release(group, &address),
    )
    .await?;
    // No config yet: applying one installs the config's release.
    let Some(running) = running else {
        return Ok(false);
    };
    // Only ever forward: a node on a newer release (or one hct cannot
    // order) is left alone and reported.
    let older = match TalosVersion::parse(&running) {
        Ok(running) if running == *target => return Ok(false),
        Ok(running) => running < *target,
        Err(_) => false,
    };
    if !older {
        return Err(ClusterError::Refused {
            summary: "Node runs a newer Talos",
            detail: format!(
                "{} runs Talos {running}, which is not older than talos_version {target}; hct \
                 upgrades nodes but never downgrades them. Set talos_version to {running}.",
                node.name
            ),
        });
    }
    let image = image::installer_image(DEFAULT_FACTORY_URL, &group.settings.schematic_id, target);
    info!(node = %node.name, from = %running, to = %target, image, "upgrading Talos");
    wait::until(group.deadline, &node.name, "starting the upgrade", || async {
        let mut client = TalosClient::connect(&address, group.trust).await?;
        match client.upgrade(&image).await {
            Ok(()) => Ok(()),
            // The request may have arrived; asking again could start a
            // second install. Whether it runs shows in the wait below.
            Err(TalosError::NotReady { message, .. }) => {
                warn!(node = %node.name, message, "no answer to the upgrade request; watching the node");
                Ok(())
            }
            Err(e) => Err(Retry::Fatal(ClusterError::Talos(e))),
        }
    })
    .await?;
    // The node keeps answering on the old release for a moment, then goes
    // down to install the new one and reboots into it.
    wait::until(
        group.deadline,
        &node.name,
        &format!("waiting for Talos {target} after the upgrade"),
        || async {
            match release(group, &address).await? {
                Some(now) if TalosVersion::parse(&now).is_ok_and(|now| now == *target) => Ok(()),
                Some(now) => Err(Retry::Again(format!("still runs {now}"))),
                None => Err(Retry::Again("in maintenance mode".into())),
            }
        },
    )
    .await?;
    bring_up::back_in_service(group, node).await?;
    info!(node = %node.name, release = %target, "upgraded");
    Ok(true)
}

/// The release the node runs (its Version tag); None in maintenance mode.
async fn release(group: &Group<'_>, address: &NodeAddress) -> Result<Option<String>, Retry> {
    match TalosClient::connect(address, group.trust).await {
        Ok(mut client) => Ok(Some(client.version().await?.tag)),
        Err(TalosError::Maintenance { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
