//! The peer tools of `scripts/ensure-peers` (OpenTofu, Hetzner's hcloud
//! provider in a filesystem mirror, the Talos machinery checker per release),
//! for tests that hold hct against them (`crate::peers` in `tests/e2e` and
//! `tests/integration`).
//!
//! The script runs once per piece and test process, unless `scripts/test`
//! builds the peers in the background and names its env file
//! (`HCT_PEERS_ENV`). When
//! it fails the tests fail: a missing peer is never a reason to skip. The
//! one exception is a Talos release the Go module proxy does not serve,
//! whose checker is built from a machinery source beside the clone
//! (`../shared`, not part of hct): without it the script names the release
//! in `TALOS_CHECK_SKIPPED`, and the tests that want it say that they skip
//! ([`Peers::talos_release_of_minor_or_skip`]). Likewise the two pieces built
//! from sources there (kubelet-csr-approver, Hetzner's cloud controller
//! manager): without them the script prints `CSR_APPROVER_SKIPPED=1` or
//! `HCLOUD_CCM_SKIPPED=1` (else `=0`) instead of their path.
#![allow(dead_code)] // each test file uses a different part of this module

pub mod kubectl;
pub mod mermaid;
pub mod talos_check;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Where the peers' `KEY=VALUE` lines come from.
pub enum Peers {
    /// The env file of `scripts/test`'s background `scripts/ensure-peers
    /// --env-file`, read again while a key is missing.
    Background(PathBuf),
    /// `scripts/ensure-peers <piece>` run for the piece a key belongs to,
    /// once per piece and process (a lone `cargo test` builds only what its
    /// tests use).
    OnDemand(Mutex<BTreeMap<String, String>>),
}

/// How long a test waits for the background peer build to reach its piece:
/// less than nextest's limit for a test (.config/nextest.toml), so that
/// this says why.
const BACKGROUND_BUILD_LIMIT: Duration = Duration::from_secs(28 * 60);

/// The piece of `scripts/ensure-peers` that prints `key`.
fn piece_of(key: &str) -> &'static str {
    match key {
        k if k.starts_with("TOFU") => "tofu",
        k if k.starts_with("KUBECTL") => "kubectl",
        k if k.starts_with("TALOS_CHECK") => "talos-check",
        k if k.starts_with("MERMAID") => "mermaid",
        // Before HCLOUD: HCLOUD_CCM, HCLOUD_CCM_SKIPPED.
        k if k.starts_with("HCLOUD_CCM") => "hcloud-ccm",
        k if k.starts_with("HCLOUD") || k == "TF_CLI_CONFIG_FILE" => "hcloud",
        k if k.starts_with("KUBERNETES") => "kubernetes",
        k if k.starts_with("ETCD") => "etcd",
        k if k.starts_with("KUBE_APISERVER")
            || k.starts_with("KUBE_CONTROLLER_MANAGER")
            || k.starts_with("KUBE_CONTROL_PLANE") =>
        {
            "kube-control-plane"
        }
        k if k.starts_with("CSR_APPROVER") => "csr-approver",
        k if k.starts_with("VERSITYGW") => "versitygw",
        other => panic!("no peer prints {other}"),
    }
}

impl Peers {
    /// A variable of the peers; panics if the script did not print it.
    /// While the background build of `scripts/test` runs, waits for the
    /// piece that prints it (tofu, kubectl, … are built one after another).
    pub fn var(&self, key: &str) -> String {
        let file = match self {
            Peers::OnDemand(vars) => {
                let mut vars = vars.lock().unwrap_or_else(|e| e.into_inner());
                if !vars.contains_key(key) {
                    let printed = crate::support::script_output("ensure-peers", &[piece_of(key)]);
                    vars.extend(read_env(&printed));
                }
                return vars
                    .get(key)
                    .unwrap_or_else(|| panic!("scripts/ensure-peers printed no {key}"))
                    .clone();
            }
            Peers::Background(file) => file,
        };
        let started = Instant::now();
        let mut writer_gone = false;
        loop {
            let vars = read_env(&std::fs::read_to_string(file).unwrap_or_default());
            if let Some(value) = vars.get(key) {
                return value.clone();
            }
            let log = file.with_file_name("peers.log");
            match vars.get("PEERS_DONE").map(String::as_str) {
                Some("ok") => panic!("{}: the peer build printed no {key}", file.display()),
                Some(_) => panic!(
                    "the peer build failed ({}) without {key}: see {}",
                    vars.get("PEERS_FAILED").map_or("?", String::as_str),
                    log.display()
                ),
                None => {}
            }
            // Gone on the last look and still no PEERS_DONE on this read
            // (done after it): it died.
            assert!(
                !writer_gone,
                "the peer build died before {key}: see {}",
                log.display()
            );
            writer_gone = vars
                .get("PEERS_PID")
                .is_some_and(|pid| !Path::new("/proc").join(pid).exists());
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

    /// The releases the script left out: those built from a machinery
    /// source that is not on this machine (`v1.14.0-rc.1`, from `../shared`).
    pub fn talos_skipped_releases(&self) -> Vec<String> {
        self.var("TALOS_CHECK_SKIPPED")
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// `talos-check` built against `release` of Talos' machinery
    /// (`TALOS_CHECK_V1_14_0_RC_1` for `v1.14.0-rc.1`).
    pub fn talos_check(&self, release: &str) -> PathBuf {
        let key = format!(
            "TALOS_CHECK_{}",
            release.to_uppercase().replace(['.', '-'], "_")
        );
        self.path(&key)
    }

    /// The one checker release of a Talos minor (`v1.13` → `v1.13.9`).
    pub fn talos_release_of_minor(&self, minor: &str) -> String {
        self.release_of_minor(minor).unwrap_or_else(|skipped| {
            panic!(
                "scripts/ensure-peers skipped talos-check {} (its machinery source under \
                 ../shared is absent): a test that can do without Talos {minor} asks \
                 talos_release_of_minor_or_skip",
                skipped.join(" ")
            )
        })
    }

    /// [`Self::talos_release_of_minor`], or `None` when the script skipped
    /// that minor's release (its machinery source is not on this machine),
    /// after saying so on stderr: the caller returns, and the test passes
    /// with the skip in its output.
    pub fn talos_release_of_minor_or_skip(&self, minor: &str) -> Option<String> {
        match self.release_of_minor(minor) {
            Ok(release) => Some(release),
            Err(skipped) => {
                eprintln!(
                    "SKIPPED: no Talos {minor} checker on this machine: scripts/ensure-peers \
                     skipped talos-check {} (the Go module proxy does not serve that machinery, \
                     and its source under ../shared beside the clone is absent); this test \
                     judged nothing with Talos {minor}",
                    skipped.join(" ")
                );
                None
            }
        }
    }

    /// The one checker release of `minor`, or the releases of it the
    /// script skipped (never none: no release of `minor` at all panics).
    fn release_of_minor(&self, minor: &str) -> Result<String, Vec<String>> {
        let prefix = format!("{minor}.");
        let of_minor = |releases: Vec<String>| -> Vec<String> {
            releases
                .into_iter()
                .filter(|r| r.starts_with(&prefix))
                .collect()
        };
        let found = of_minor(self.talos_releases());
        match found.as_slice() {
            [one] => return Ok(one.clone()),
            [] => {}
            other => panic!("expected one talos-check release of {minor}, got {other:?}"),
        }
        let skipped = of_minor(self.talos_skipped_releases());
        assert!(
            !skipped.is_empty(),
            "no talos-check release of {minor}: scripts/ensure-peers built {:?}",
            self.talos_releases()
        );
        Err(skipped)
    }
}

fn read_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The peers: from the env file `scripts/test` names in `HCT_PEERS_ENV`
/// (its background build, waited for per key), else built (or found built)
/// piece by piece as the tests ask for them.
pub fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| match std::env::var_os("HCT_PEERS_ENV") {
        Some(file) => Peers::Background(PathBuf::from(file)),
        None => Peers::OnDemand(Mutex::default()),
    })
}
