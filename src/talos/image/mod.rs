//! Talos images on Hetzner: schematics and their IDs, where the factory
//! serves an image, and the label and description that carry a schematic.

pub mod schematic;

pub use schematic::Schematic;

use crate::talos::release::TalosVersion;

pub const DEFAULT_FACTORY_URL: &str = "https://factory.talos.dev";

/// Hetzner label values hold at most 63 characters, one less than a
/// schematic ID, so the `schematic` label carries its first 32 hex digits;
/// the snapshot's description carries the whole ID.
pub fn schematic_label(schematic_id: &str) -> &str {
    &schematic_id[..schematic_id.len().min(32)]
}

/// `amd64` or `arm64` (Talos' names); Hetzner says `x86` and `arm`.
pub fn hetzner_architecture(architecture: &str) -> Option<&'static str> {
    match architecture {
        "amd64" => Some("x86"),
        "arm64" => Some("arm"),
        _ => None,
    }
}

/// The raw disk image for Hetzner Cloud.
pub fn image_url(
    factory: &str,
    schematic_id: &str,
    version: &TalosVersion,
    architecture: &str,
) -> String {
    format!(
        "{}/image/{schematic_id}/{version}/hcloud-{architecture}.raw.xz",
        factory.trim_end_matches('/')
    )
}

/// The installer image nodes install and upgrade from. Since Talos 1.10 the
/// factory serves an installer per platform; `installer/` is the metal one.
pub fn installer_image(factory: &str, schematic_id: &str, version: &TalosVersion) -> String {
    let host = factory
        .trim_end_matches('/')
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let installer = if *version >= TalosVersion::new(1, 10, 0) {
        "hcloud-installer"
    } else {
        "installer"
    };
    format!("{host}/{installer}/{schematic_id}:{version}")
}

/// The full schematic ID in a snapshot description ("… schematic <id>").
pub fn schematic_in_description(description: &str) -> Option<&str> {
    description
        .split(|c: char| !c.is_ascii_hexdigit())
        .find(|word| word.len() == 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factory_addresses() {
        let v = TalosVersion::new(1, 12, 6);
        let id = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";
        assert_eq!(
            image_url("https://factory.talos.dev/", id, &v, "arm64"),
            format!("https://factory.talos.dev/image/{id}/v1.12.6/hcloud-arm64.raw.xz")
        );
        assert_eq!(
            installer_image(DEFAULT_FACTORY_URL, id, &v),
            format!("factory.talos.dev/hcloud-installer/{id}:v1.12.6")
        );
        assert_eq!(
            installer_image(DEFAULT_FACTORY_URL, id, &TalosVersion::new(1, 9, 5)),
            format!("factory.talos.dev/installer/{id}:v1.9.5")
        );
        assert_eq!(schematic_label(id).len(), 32);
        assert_eq!(
            schematic_in_description(&format!("Talos Linux v1.12.6 (amd64), schematic {id}")),
            Some(id)
        );
    }
}
