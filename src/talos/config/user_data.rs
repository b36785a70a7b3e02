//! Fitting a machine config into Hetzner's `user_data` (at most 32 KiB).
//!
//! Talos' hcloud platform (since 1.9) base64-decodes user data that is valid
//! base64, and its config loader gunzips data that starts with the gzip
//! magic. So a config that is too big goes as base64(gzip(config)); plain
//! YAML is never valid base64 (it has `:` and spaces), so the two cannot be
//! confused.

use std::io::Write;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use flate2::Compression;
use flate2::write::GzEncoder;

use super::ConfigError;

/// Hetzner's limit on a server's user data.
pub const USER_DATA_LIMIT: usize = 32 * 1024;

/// The config as Hetzner user data: as is when it fits, else gzipped and
/// base64-encoded; an error when even that is too big.
pub fn user_data(config: &str) -> Result<String, ConfigError> {
    if config.len() <= USER_DATA_LIMIT {
        return Ok(config.to_owned());
    }
    let compressed = STANDARD.encode(gzip(config.as_bytes()));
    if compressed.len() <= USER_DATA_LIMIT {
        Ok(compressed)
    } else {
        Err(ConfigError::UserDataTooLarge {
            size: config.len(),
            compressed: compressed.len(),
            limit: USER_DATA_LIMIT,
        })
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use flate2::read::GzDecoder;

    use super::*;

    fn gunzip_base64(text: &str) -> String {
        let bytes = STANDARD.decode(text).expect("base64");
        let mut out = String::new();
        GzDecoder::new(bytes.as_slice())
            .read_to_string(&mut out)
            .expect("gzip");
        out
    }

    #[test]
    fn small_configs_go_as_they_are() {
        let config = "version: v1alpha1\nmachine: {}\n";
        assert_eq!(user_data(config).unwrap(), config);
        let exactly = "a".repeat(USER_DATA_LIMIT);
        assert_eq!(user_data(&exactly).unwrap(), exactly);
    }

    #[test]
    fn large_configs_are_gzipped_and_base64_encoded() {
        let line = "        - name: some-inline-manifest-line-that-compresses: well\n";
        let config = format!(
            "version: v1alpha1\n{}",
            line.repeat(USER_DATA_LIMIT / line.len() + 10)
        );
        assert!(config.len() > USER_DATA_LIMIT);
        let data = user_data(&config).unwrap();
        assert!(data.len() <= USER_DATA_LIMIT);
        // What Talos sees after base64-decoding: gzip's magic bytes.
        assert!(STANDARD.decode(&data).unwrap().starts_with(&[0x1f, 0x8b]));
        assert_eq!(gunzip_base64(&data), config);
    }

    #[test]
    fn incompressible_configs_are_refused_with_sizes() {
        // Pseudo-random printable text: gzip cannot shrink it enough.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let noise: String = (0..USER_DATA_LIMIT * 2)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'!' + (state % 90) as u8)
            })
            .collect();
        let error = user_data(&noise).unwrap_err();
        match &error {
            ConfigError::UserDataTooLarge {
                size,
                compressed,
                limit,
            } => {
                assert_eq!(*size, noise.len());
                assert!(*compressed > *limit);
            }
            other => panic!("unexpected {other:?}"),
        }
        let message = error.to_string();
        assert!(
            message.contains("65536") && message.contains("32768"),
            "{message}"
        );
        assert!(message.contains("config_patches"), "{message}");
    }
}
