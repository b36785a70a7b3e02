//! Talos' own judgement of machine configs: runs `talos-check-<release>
//! validate` (see tests/talos-check/main.go) over config files and reads its
//! JSON verdicts. Used by tests/integration/talos_machinery.rs on generated configs and
//! by the cluster end-to-end tests on the configs hct applied to hct-sim.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A config to check, and what it is (for messages and its file name).
pub struct Config {
    pub label: String,
    pub text: String,
}

/// The checker's verdict on one file.
pub struct Verdict {
    pub label: String,
    pub report: Value,
}

impl Verdict {
    pub fn valid(&self) -> bool {
        self.report["valid"] == Value::Bool(true)
    }

    pub fn warnings(&self) -> Vec<&str> {
        let mut out: Vec<&str> = strings(&self.report["warnings"]);
        for doc in self.report["documents"].as_array().into_iter().flatten() {
            out.extend(strings(&doc["warnings"]));
        }
        out
    }

    /// Every message Talos gave: the load error, or the whole config's
    /// errors and each document's own.
    pub fn messages(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(load) = self.report["loadError"].as_str() {
            out.push(format!("load: {load}"));
        }
        out.extend(
            strings(&self.report["errors"])
                .into_iter()
                .map(str::to_owned),
        );
        for doc in self.report["documents"].as_array().into_iter().flatten() {
            if let Some(error) = doc["error"].as_str() {
                out.push(format!("{}: {error}", doc["kind"].as_str().unwrap_or("?")));
            }
        }
        out
    }

    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} (machinery {}, mode {}, strict {}): {}\n",
            self.label,
            self.report["machinery"].as_str().unwrap_or("?"),
            self.report["mode"].as_str().unwrap_or("?"),
            self.report["strict"],
            if self.valid() { "valid" } else { "INVALID" }
        );
        for message in self.messages() {
            let _ = writeln!(s, "    error: {message}");
        }
        for warning in self.warnings() {
            let _ = writeln!(s, "    warning: {warning}");
        }
        s
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Runs `talos-check-<release> validate -json -mode cloud` (strict) on the
/// configs, one process for all, and checks that its exit code agrees with
/// its verdicts.
pub fn check(release: &str, configs: &[Config]) -> Vec<Verdict> {
    check_with(release, configs, &["-mode", "cloud"])
}

/// [`check`] with other `validate` flags.
pub fn check_with(release: &str, configs: &[Config], flags: &[&str]) -> Vec<Verdict> {
    let checker = super::peers().talos_check(release);
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = configs
        .iter()
        .map(|config| {
            let path = dir.path().join(format!("{}.yaml", config.label));
            std::fs::write(&path, &config.text).unwrap();
            path
        })
        .collect();
    let out = Command::new(&checker)
        .args(["validate", "-json"])
        .args(flags)
        .args(&files)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", checker.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let verdicts: Vec<Verdict> = stdout
        .lines()
        .zip(configs)
        .map(|(line, config)| Verdict {
            label: config.label.clone(),
            report: serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("talos-check printed {line:?}: {e}\n{stderr}")),
        })
        .collect();
    assert_eq!(
        verdicts.len(),
        configs.len(),
        "talos-check {release} gave {} verdicts for {} files (exit {}):\n{stdout}\n{stderr}",
        verdicts.len(),
        configs.len(),
        out.status
    );
    for (verdict, file) in verdicts.iter().zip(&files) {
        assert_eq!(
            verdict.report["file"].as_str().map(Path::new),
            Some(file.as_path())
        );
        assert_eq!(verdict.report["machinery"], release, "{}", verdict.label);
    }
    let all_valid = verdicts.iter().all(Verdict::valid);
    let expected_code = if all_valid { 0 } else { 1 };
    assert_eq!(
        out.status.code(),
        Some(expected_code),
        "talos-check {release}: exit code disagrees with its verdicts\n{stderr}"
    );
    verdicts
}

/// Asserts Talos found nothing to say: valid, and without a warning.
pub fn assert_clean(release: &str, verdicts: &[Verdict]) {
    let mut report = String::new();
    for verdict in verdicts {
        eprint!("{}", verdict.describe());
        if !verdict.valid() || !verdict.warnings().is_empty() {
            report.push_str(&verdict.describe());
        }
    }
    assert!(
        report.is_empty(),
        "Talos machinery {release} does not accept these configs as they are:\n{report}"
    );
}

/// Each document hct generated, by kind, as the checker loaded it.
pub fn kinds(verdict: &Verdict) -> Vec<&str> {
    verdict.report["documents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["kind"].as_str())
        .collect()
}
