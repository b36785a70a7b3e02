//! The peer tools of `scripts/ensure-peers` (OpenTofu, Hetzner's hcloud
//! provider in a filesystem mirror, the Talos machinery checker per release),
//! for tests that hold hct against them: `mod peers;` in a test file.
//!
//! The script runs once per test process. When it fails the tests fail: a
//! missing peer is never a reason to skip.
#![allow(dead_code)] // each test file uses a different part of this module

pub mod kubectl;
pub mod mermaid;
pub mod talos_check;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What `scripts/ensure-peers` printed: the `KEY=VALUE` lines of
/// `target/peers/versions.env`.
pub struct Peers {
    vars: BTreeMap<String, String>,
}

impl Peers {
    /// A variable of versions.env; panics if the script did not print it.
    pub fn var(&self, key: &str) -> &str {
        self.vars
            .get(key)
            .unwrap_or_else(|| panic!("scripts/ensure-peers printed no {key}"))
    }

    pub fn path(&self, key: &str) -> PathBuf {
        PathBuf::from(self.var(key))
    }

    /// The Talos machinery releases a checker was built for (`v1.12.6`, …).
    pub fn talos_releases(&self) -> Vec<&str> {
        self.var("TALOS_CHECK_RELEASES")
            .split_whitespace()
            .collect()
    }

    /// `talos-check` built against `release` of Talos' machinery.
    pub fn talos_check(&self, release: &str) -> PathBuf {
        let key = format!("TALOS_CHECK_{}", release.to_uppercase().replace('.', "_"));
        self.path(&key)
    }

    /// The one checker release of a Talos minor (`v1.13` → `v1.13.9`).
    pub fn talos_release_of_minor(&self, minor: &str) -> &str {
        let prefix = format!("{minor}.");
        let found: Vec<&str> = self
            .talos_releases()
            .into_iter()
            .filter(|r| r.starts_with(&prefix))
            .collect();
        match found.as_slice() {
            [one] => one,
            other => panic!("expected one talos-check release of {minor}, got {other:?}"),
        }
    }
}

/// The repository root (where Cargo.toml is).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the peers (or finds them built) once per test process.
pub fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        let script = repo_root().join("scripts/ensure-peers");
        let out = Command::new(&script)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed ({}); its progress and error are on stderr above",
            script.display(),
            out.status
        );
        let text = String::from_utf8(out.stdout).expect("ensure-peers printed non-UTF-8");
        let vars = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Peers { vars }
    })
}
