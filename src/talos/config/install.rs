//! `machine.install`: where Talos installs itself and from which image.
//!
//! Nodes boot from the Image Factory's Hetzner disk image
//! (`hcloud-<arch>.raw.xz`), already installed. The installer image matters
//! for upgrades: since Talos 1.10 the Image Factory serves per-platform
//! installers and names `factory.talos.dev/hcloud-installer/<schematic>:<version>`
//! for Hetzner (the bare `installer/` path is the metal one).

use serde_json::{Value, json};

use super::input::Node;
use crate::talos::image;

/// The installer for the node's schematic and Talos version.
pub(crate) fn installer_image(node: &Node) -> String {
    image::installer_image(image::DEFAULT_FACTORY_URL, &node.schematic_id, &node.talos)
}

/// `machine.install`, in schema order.
pub(crate) fn section(node: &Node) -> Value {
    let mut install = json!({
        "disk": node.install_disk,
        "image": installer_image(node),
        "wipe": false,
    });
    if node.contract.grub_uses_uki_cmdline() {
        install["grubUseUKICmdline"] = json!(true);
    }
    install
}
