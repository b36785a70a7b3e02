//! Fidelity of hct-sim, the Hetzner Cloud emulator, measured with Hetzner's
//! own Python library: `tests/sim_fidelity/hcloud_scenario.py` drives a fresh
//! `hct-sim serve` through networks, servers, snapshots, paging, label
//! selectors, locks and injected faults, asserting on what `hcloud` parses.
//!
//! The emulator runs as its binary (built here with cargo, or `$HCT_SIM_BIN`),
//! so its command-line contract — the two `eval`-able lines on stdout and a
//! clean exit on SIGTERM — is tested too. Python comes from
//! `scripts/ensure-python-tools` (a venv with a pinned `hcloud`).

use std::io::{BufRead, BufReader, Lines};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{repo_root, script_output};

/// `$HCT_SIM_BIN`, or the binary cargo builds for package hct-sim.
fn sim_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("HCT_SIM_BIN") {
        return PathBuf::from(path);
    }
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "hct-sim",
            "--bin",
            "hct-sim",
            "--message-format=json",
        ])
        .current_dir(repo_root())
        .stderr(Stdio::inherit())
        .output()
        .expect("running cargo build -p hct-sim");
    assert!(out.status.success(), "cargo build -p hct-sim failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == "hct-sim")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .expect("cargo reported no hct-sim executable")
}

fn python() -> PathBuf {
    PathBuf::from(script_output("ensure-python-tools", &[]).trim())
}

/// A running `hct-sim serve`, stopped with SIGKILL if the test fails early.
struct RunningSim {
    child: Child,
    endpoint: String,
    proxy: String,
    /// Held open so the emulator never writes into a closed pipe.
    _stdout: Lines<BufReader<ChildStdout>>,
    log: PathBuf,
}

impl RunningSim {
    fn start(token: &str) -> Self {
        let log = std::env::temp_dir().join(format!("hct-sim-fidelity-{}.log", std::process::id()));
        let stderr = std::fs::File::create(&log).expect("creating the hct-sim log");
        let mut child = Command::new(sim_binary())
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--token",
                token,
                "--seed",
            ])
            .args(["--durations", "fast", "--duration", "create_image=1500ms"])
            .env("RUST_LOG", "hct_sim=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("starting hct-sim");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut next = |name: &str| -> String {
            let line = lines
                .next()
                .and_then(Result::ok)
                .unwrap_or_else(|| panic!("hct-sim printed no {name} line"));
            line.strip_prefix(&format!("{name}="))
                .unwrap_or_else(|| panic!("expected {name}=…, got {line:?}"))
                .to_string()
        };
        let endpoint = next("HCLOUD_ENDPOINT");
        let proxy = next("HCT_TALOS_PROXY");
        Self {
            child,
            endpoint,
            proxy,
            _stdout: lines,
            log,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then the exit status within a few seconds.
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "hct-sim did not exit on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

#[test]
fn hcloud_python_library_accepts_the_emulator() {
    let python = python();
    let token = format!("fidelity-{}", std::process::id());
    let sim = RunningSim::start(&token);
    assert!(sim.endpoint.starts_with("http://127.0.0.1:") && sim.endpoint.ends_with("/v1"));
    assert!(
        sim.proxy.starts_with("socks5://127.0.0.1:"),
        "{}",
        sim.proxy
    );

    let scenario = repo_root().join("tests/sim_fidelity/hcloud_scenario.py");
    let out = Command::new(&python)
        .arg(&scenario)
        .env("HCLOUD_ENDPOINT", &sim.endpoint)
        .env("HCLOUD_TOKEN", &token)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("running the hcloud scenario");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        panic!(
            "hcloud scenario failed ({}):\n{report}\n--- hct-sim stderr ---\n{}",
            out.status,
            sim.stderr()
        );
    }
    eprintln!("{report}");
    let status = sim.terminate();
    assert!(status.success(), "hct-sim exited with {status} on SIGTERM");
}
