//! The peer tools of `scripts/ensure-peers` (OpenTofu, Hetzner's hcloud
//! provider in a filesystem mirror, the Talos machinery checker per release),
//! for tests that hold hct against them: `mod peers;` in a test file.
//!
//! The script runs once per test process, unless `scripts/test` builds the
//! peers in the background and names its env file (`HCT_PEERS_ENV`). When
//! it fails the tests fail: a missing peer is never a reason to skip.
#![allow(dead_code)] // each test file uses a different part of this module

pub mod kubectl;
pub mod mermaid;
pub mod talos_check;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What `scripts/ensure-peers` printed: `KEY=VALUE` lines.
pub struct Peers {
    vars: BTreeMap<String, String>,
    /// The env file a background `scripts/ensure-peers --env-file` is
    /// still writing (`scripts/test`), read again while a key is missing.
    pending: Option<PathBuf>,
}

/// How long a test waits for the background peer build to reach its piece.
const BACKGROUND_BUILD_LIMIT: Duration = Duration::from_secs(45 * 60);

impl Peers {
    /// A variable of the peers; panics if the script did not print it.
    /// While the background build of `scripts/test` runs, waits for the
    /// piece that prints it (tofu, kubectl, … are built one after another).
    pub fn var(&self, key: &str) -> String {
        if let Some(value) = self.vars.get(key) {
            return value.clone();
        }
        let Some(file) = &self.pending else {
            panic!("scripts/ensure-peers printed no {key}")
        };
        let started = Instant::now();
        loop {
            let vars = read_env(&std::fs::read_to_string(file).unwrap_or_default());
            if let Some(value) = vars.get(key) {
                return value.clone();
            }
            match vars.get("PEERS_DONE").map(String::as_str) {
                Some("ok") => panic!("{}: the peer build printed no {key}", file.display()),
                Some(_) => panic!(
                    "{}: the peer build failed before {key}; its log is beside it",
                    file.display()
                ),
                None => {}
            }
            assert!(
                started.elapsed() < BACKGROUND_BUILD_LIMIT,
                "waited {BACKGROUND_BUILD_LIMIT:?} for {key} in {}",
                file.display()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    pub fn path(&self, key: &str) -> PathBuf {
        PathBuf::from(self.var(key))
    }

    /// The Talos machinery releases a checker was built for (`v1.12.6`, …).
    pub fn talos_releases(&self) -> Vec<String> {
        self.var("TALOS_CHECK_RELEASES")
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// `talos-check` built against `release` of Talos' machinery.
    pub fn talos_check(&self, release: &str) -> PathBuf {
        let key = format!("TALOS_CHECK_{}", release.to_uppercase().replace('.', "_"));
        self.path(&key)
    }

    /// The one checker release of a Talos minor (`v1.13` → `v1.13.9`).
    pub fn talos_release_of_minor(&self, minor: &str) -> String {
        let prefix = format!("{minor}.");
        let found: Vec<String> = self
            .talos_releases()
            .into_iter()
            .filter(|r| r.starts_with(&prefix))
            .collect();
        match found.as_slice() {
            [one] => one.clone(),
            other => panic!("expected one talos-check release of {minor}, got {other:?}"),
        }
    }
}

fn read_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The repository root (where Cargo.toml is).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The peers: from the env file `scripts/test` names in `HCT_PEERS_ENV`
/// (its background build, waited for per key), else built (or found built)
/// by running `scripts/ensure-peers` once per test process.
pub fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        if let Some(file) = std::env::var_os("HCT_PEERS_ENV") {
            return Peers {
                vars: BTreeMap::new(),
                pending: Some(PathBuf::from(file)),
            };
        }
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
        Peers {
            vars: read_env(&text),
            pending: None,
        }
    })
}
