//! Mermaid's own parser (`scripts/ensure-peers mermaid` installs it from npm into
//! the per-machine peer cache), for the diagrams hct draws.

use std::io::Write;
use std::process::{Command, Stdio};

/// Parses `source` with Mermaid; the diagram type (`flowchart-v2`), or the
/// parser's error.
pub fn parse(source: &str) -> Result<String, String> {
    let script = super::peers().path("MERMAID_CHECK");
    let mut child = Command::new("node")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running node {}: {e}", script.display()));
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(source.as_bytes())
        .expect("writing the diagram to the checker");
    let out = child.wait_with_output().expect("the checker runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_string();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}
