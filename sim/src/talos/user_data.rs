//! What Talos on Hetzner reads from a server's user data: the machine
//! config as text, or base64 of it, or base64 of its gzip (how a config
//! over Hetzner's 32 KiB limit fits). Anything that is not a machine config
//! (a cloud-init file, a script) leaves the node in maintenance mode.

use std::io::Read;

use base64::Engine;
use flate2::read::GzDecoder;

use super::config;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The machine config that user data carries, if it carries one.
pub fn machine_config(user_data: &str) -> Option<String> {
    let compact: String = user_data.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .unwrap_or_else(|_| user_data.as_bytes().to_vec());
    let text = if bytes.starts_with(&GZIP_MAGIC) {
        let mut text = String::new();
        GzDecoder::new(bytes.as_slice())
            .read_to_string(&mut text)
            .ok()?;
        text
    } else {
        String::from_utf8(bytes).ok()?
    };
    config::is_machine_config(&text).then_some(text)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    const CONFIG: &str = "version: v1alpha1\nmachine: {type: worker}\n";

    #[test]
    fn reads_plain_base64_and_gzipped_configs() {
        let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
        gzip.write_all(CONFIG.as_bytes()).unwrap();
        let gzipped = encode(&gzip.finish().unwrap());
        for user_data in [CONFIG.to_string(), encode(CONFIG.as_bytes()), gzipped] {
            assert_eq!(machine_config(&user_data).as_deref(), Some(CONFIG));
        }
    }

    #[test]
    fn other_user_data_is_no_config() {
        assert_eq!(machine_config("#cloud-config\npackages: [curl]\n"), None);
        assert_eq!(machine_config("#!/bin/sh\nreboot\n"), None);
        assert_eq!(machine_config(""), None);
    }
}
