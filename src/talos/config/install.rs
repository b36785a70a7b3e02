//! `machine.install`: where Talos installs itself and from which image.
//!
//! Nodes boot from the Image Factory's Hetzner disk image
//! (`hcloud-<arch>.raw.xz`), already installed. The installer image matters
//! for upgrades: since Talos 1.10 the Image Factory serves per-platform
//! installers and names `factory.talos.dev/hcloud-installer/<schematic>:<version>`
//! for Hetzner (the bare `installer/` path is the metal one).

use serde_json::{Value, json};

use super::input::Node;

const IMAGE_FACTORY: &str = "factory.talos.dev";
const PLATFORM: &str = "hcloud";

/// The installer for the node's schematic and Talos version.
pub(crate) fn installer_image(node: &Node) -> String {
    installer_image_for(&node.schematic_id, &node.talos.to_string())
}

/// The Image Factory's Hetzner installer of `schematic_id` at `talos_version`
/// (what `talosctl upgrade --image` takes).
pub fn installer_image_for(schematic_id: &str, talos_version: &str) -> String {
    format!("{IMAGE_FACTORY}/{PLATFORM}-installer/{schematic_id}:{talos_version}")
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
