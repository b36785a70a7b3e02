//! PEM text as Go's `encoding/pem` writes it: base64 in 64-column lines,
//! `\n` line endings, a final newline.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// One decoded PEM block.
pub(crate) struct Block {
    pub label: String,
    pub der: Vec<u8>,
}

pub(crate) fn encode(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        // Base64 output is ASCII, so every chunk is valid UTF-8.
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The first PEM block in `text`, if any.
pub(crate) fn decode(text: &str) -> Option<Block> {
    let block = ::pem::parse(text).ok()?;
    Some(Block {
        label: block.tag().to_owned(),
        der: block.into_contents(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_go_and_decodes_back() {
        let der: Vec<u8> = (0..=255).collect();
        let text = encode("TEST", &der);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "-----BEGIN TEST-----");
        assert!(lines[1..lines.len() - 1].iter().all(|l| l.len() <= 64));
        assert_eq!(lines[1].len(), 64);
        assert!(text.ends_with("-----END TEST-----\n"));
        let block = decode(&text).unwrap();
        assert_eq!((block.label.as_str(), block.der), ("TEST", der));
        assert!(decode("not pem").is_none());
    }
}
