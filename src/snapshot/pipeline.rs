//! The one command the builder's rescue system runs: register the
//! schematic with the Image Factory, stream the raw image through `xz` onto
//! the disk, flush. `set -euo pipefail` makes a failed download, a corrupt
//! stream or a failed write fail the command (and so the apply) instead of
//! snapshotting half a disk.

use crate::talos::image::Schematic;

/// The disk of a Hetzner cloud server in the rescue system.
pub const DISK: &str = "/dev/sda";

/// The command for the rescue shell (bash, as root).
pub fn write_image_command(factory: &str, schematic: &Schematic, image_url: &str) -> String {
    let factory = factory.trim_end_matches('/');
    // The factory serves only schematics it knows: registering is idempotent
    // (the ID is the hash of this YAML) and makes custom ones known.
    let register = format!(
        "printf '%s' {} | curl -fsS --retry 3 -X POST --data-binary @- {} >/dev/null",
        shell_quote(&schematic.canonical_yaml()),
        shell_quote(&format!("{factory}/schematics")),
    );
    let write = format!(
        "curl -fsSL --retry 3 --retry-connrefused {} | xz -d | dd of={DISK} bs=4M conv=fsync status=none",
        shell_quote(image_url)
    );
    format!("set -euo pipefail; {register}; {write}; sync")
}

/// Single-quotes `text` for a POSIX shell (`'` becomes `'\''`).
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talos::image::{self, DEFAULT_FACTORY_URL};
    use crate::talos::release::TalosVersion;

    fn qemu() -> Schematic {
        Schematic {
            extensions: vec!["siderolabs/qemu-guest-agent".into()],
            ..Schematic::default()
        }
    }

    fn command(schematic: &Schematic, arch: &str) -> String {
        let url = image::image_url(
            DEFAULT_FACTORY_URL,
            &schematic.id(),
            &TalosVersion::new(1, 12, 6),
            arch,
        );
        write_image_command(DEFAULT_FACTORY_URL, schematic, &url)
    }

    #[test]
    fn strict_download_decompress_write_and_sync() {
        let c = command(&qemu(), "amd64");
        assert!(c.starts_with("set -euo pipefail; "), "{c}");
        assert!(c.ends_with("; sync"), "{c}");
        assert!(c.contains(
            "curl -fsSL --retry 3 --retry-connrefused 'https://factory.talos.dev/image/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515/v1.12.6/hcloud-amd64.raw.xz' | xz -d | dd of=/dev/sda bs=4M"
        ), "{c}");
        assert!(
            c.contains("--data-binary @- 'https://factory.talos.dev/schematics'"),
            "{c}"
        );
        assert!(c.contains("officialExtensions"), "{c}");
    }

    #[test]
    fn quotes_what_the_shell_would_read() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        let args = Schematic {
            extra_kernel_args: vec!["foo='x y'".into()],
            ..Schematic::default()
        };
        let parsed = hct_sim::rescue::command::parse(&command(&args, "arm64")).unwrap();
        let printf = &parsed[1][0];
        assert_eq!(printf[2], args.canonical_yaml());
    }

    /// The emulator checks the command as the rescue system would run it:
    /// the image is written only when the registered schematic is the one in
    /// the URL.
    #[test]
    fn hct_sim_accepts_it_for_every_schematic() {
        for schematic in [Schematic::default(), qemu()] {
            for arch in ["amd64", "arm64"] {
                let written = hct_sim::rescue::command::check(&command(&schematic, arch))
                    .unwrap_or_else(|r| panic!("{}", r.stderr));
                assert_eq!(written.schematic, schematic.id());
                assert_eq!(written.arch, arch);
                assert!(written.registered);
            }
        }
    }
}
