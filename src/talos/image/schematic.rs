//! Image Factory schematics: what is baked into a Talos image (official
//! extensions, extra kernel arguments), and the ID the factory gives it —
//! the SHA-256 of the schematic's canonical YAML, computed offline so it is
//! known at plan time.

use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schematic {
    pub extra_kernel_args: Vec<String>,
    /// Official system extensions, e.g. `siderolabs/qemu-guest-agent`.
    pub extensions: Vec<String>,
}

impl Schematic {
    /// The canonical YAML the factory hashes: its fields in its order, empty
    /// ones left out, four-space indentation.
    pub fn canonical_yaml(&self) -> String {
        let mut body = String::new();
        if !self.extra_kernel_args.is_empty() {
            body += "    extraKernelArgs:\n";
            for arg in &self.extra_kernel_args {
                body += &format!("        - {}\n", scalar(arg));
            }
        }
        if !self.extensions.is_empty() {
            body += "    systemExtensions:\n        officialExtensions:\n";
            for extension in &self.extensions {
                body += &format!("            - {}\n", scalar(extension));
            }
        }
        if body.is_empty() {
            "customization: {}\n".to_string()
        } else {
            format!("customization:\n{body}")
        }
    }

    pub fn id(&self) -> String {
        hex(&Sha256::digest(self.canonical_yaml().as_bytes()))
    }
}

/// A YAML scalar as the factory's encoder writes it: plain when that reads
/// back as the same string, double-quoted when plain would read as another
/// type, single-quoted otherwise.
fn scalar(text: &str) -> String {
    let reads_as_other_type = matches!(
        text.to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "~" | ""
    ) || text.parse::<f64>().is_ok();
    if reads_as_other_type {
        return format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    }
    let plain_safe = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._/=,+-@%".contains(c))
        && !text.starts_with(['-', '@', '%']);
    if plain_safe {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "''"))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_factory_ids_of_known_schematics() {
        assert_eq!(
            Schematic::default().id(),
            "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
        );
        let qemu = Schematic {
            extensions: vec!["siderolabs/qemu-guest-agent".into()],
            ..Schematic::default()
        };
        assert_eq!(
            qemu.id(),
            "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
        );
    }

    #[test]
    fn kernel_args_come_first_and_change_the_id() {
        let schematic = Schematic {
            extra_kernel_args: vec!["net.ifnames=0".into()],
            extensions: vec!["siderolabs/qemu-guest-agent".into()],
        };
        assert_eq!(
            schematic.canonical_yaml(),
            "customization:\n    extraKernelArgs:\n        - net.ifnames=0\n    systemExtensions:\n        officialExtensions:\n            - siderolabs/qemu-guest-agent\n"
        );
        assert_ne!(schematic.id(), Schematic::default().id());
    }

    #[test]
    fn quotes_scalars_like_the_factory() {
        assert_eq!(scalar("console=ttyS0"), "console=ttyS0");
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar("1"), "\"1\"");
        assert_eq!(scalar("a b: c"), "'a b: c'");
    }
}
