//! Shared harness for hct's end-to-end and integration tests (`tests/e2e`,
//! `tests/integration`: each target declares it once, as `crate::support`).
//!
//! - [`cli`]: the CLI under test, Terraform or OpenTofu by `$HCT_CLI`
//!   (`scripts/ensure-cli`).
//! - [`Workspace`]: a temp dir of `.tf` files with its own CLI config, in which
//!   [`Workspace::terraform`] runs commands with a clean, non-interactive env.
//! - [`HttpsServer`]: a static HTTPS server on 127.0.0.1 with a throwaway CA.
#![allow(dead_code)] // each test file uses a different part of this module

pub mod cli;
pub mod cluster_state;
pub mod fault_cells;
pub mod plan;
pub mod reference;
pub mod s3;
pub mod sim;
pub mod timeline;

pub use cli::{cli, script_output};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// The provider's source address, as users write it in `required_providers`.
pub const PROVIDER_SOURCE: &str = "registry.hct.internal/hct/hct";

/// The repository root (where Cargo.toml is).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The provider binary cargo built for this test run.
pub fn provider_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_terraform-provider-hct"))
}

/// Quotes `s` as a double-quoted HCL string (for paths and URLs put into `.tf`
/// files or CLI configs). Escapes `"`, `\` and newlines; `${`/`%{` are left as
/// they are (CLI config files, unlike `.tf` files, do not treat them as templates).
pub fn hcl_string(s: impl AsRef<str>) -> String {
    let mut out = String::from('"');
    for c in s.as_ref().chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `dev_overrides` block (indented for `provider_installation`) that
/// points hct's source address at the provider binary cargo built.
fn dev_overrides_block() -> String {
    let bin = provider_binary();
    let dir = bin.parent().expect("provider binary has a parent dir");
    format!(
        "  dev_overrides {{\n    {} = {}\n  }}\n",
        hcl_string(PROVIDER_SOURCE),
        hcl_string(dir.to_str().expect("non-UTF-8 target dir")),
    )
}

/// Terraform subcommands that accept `-no-color`; [`Workspace::terraform`] adds it to these.
const NO_COLOR_COMMANDS: &[&str] = &[
    "apply", "console", "destroy", "fmt", "get", "import", "init", "output", "plan", "refresh",
    "show", "test", "validate",
];

/// A temporary Terraform working directory with its own CLI config file.
///
/// The same files serve OpenTofu (checked against OpenTofu 1.12.6's source and
/// by running every suite under it): it reads the file named by
/// `TF_CLI_CONFIG_FILE` (without it, `~/.tofurc` before `~/.terraformrc`, which
/// is why the variable is always set here), the same `provider_installation`
/// syntax (`dev_overrides`, `filesystem_mirror`, `network_mirror`, `direct`),
/// the same mirror protocols and `.terraform.lock.hcl` format, and honours
/// `TF_REATTACH_PROVIDERS`, `TF_IN_AUTOMATION` and `TF_INPUT`. Its default
/// registry is `registry.opentofu.org` rather than `registry.terraform.io`,
/// which only changes short source addresses; the suites use hct's full
/// address, so `direct {}` is never asked, and the one that also uses
/// hcloud's short address (`complete_e2e`) gets it from a filesystem mirror
/// that holds it under both registries ([`Workspace::dev_override_with_hcloud`]).
///
/// Layout: `<tmp>/work` (the working dir, [`Workspace::path`]) and
/// `<tmp>/cli.tfrc` (the `TF_CLI_CONFIG_FILE`). Removed on drop.
pub struct Workspace {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    cli_config: PathBuf,
    env: Vec<(String, String)>,
}

/// The result of one Terraform command.
#[derive(Debug)]
pub struct TfOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl TfOutput {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Returns `self` if the command succeeded; panics with both streams otherwise.
    #[track_caller]
    pub fn expect_success(self, what: &str) -> Self {
        if !self.success() {
            panic!("{what}: terraform failed ({})\n{self}", self.status);
        }
        self
    }

    /// Returns `self` if the command failed; panics with both streams otherwise.
    #[track_caller]
    pub fn expect_failure(self, what: &str) -> Self {
        if self.success() {
            panic!("{what}: terraform unexpectedly succeeded\n{self}");
        }
        self
    }
}

impl std::fmt::Display for TfOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout, self.stderr
        )
    }
}

impl Workspace {
    /// A workspace whose CLI config points `registry.hct.internal/hct/hct` at the
    /// provider binary cargo built (dev_overrides; no `terraform init` needed).
    pub fn dev_override(files: &[(&str, &str)]) -> Workspace {
        let config = format!(
            "provider_installation {{\n{}  direct {{}}\n}}\n",
            dev_overrides_block()
        );
        Workspace::with_cli_config(files, &config)
    }

    /// A workspace for configurations that use Hetzner's hcloud provider
    /// next to hct: hct by dev_overrides as in [`Workspace::dev_override`],
    /// hcloud from the filesystem mirror `hcloud_mirror` (`scripts/ensure-peers`'
    /// `HCLOUD_PROVIDER_MIRROR`) under both registries' addresses, and nothing
    /// from the network. `terraform init` is needed (for hcloud); since init
    /// also looks for every provider the configuration requires, dev overrides
    /// or not, hct's binary is offered in a second filesystem mirror in the
    /// workspace's temp dir (unpacked layout, a symlink).
    pub fn dev_override_with_hcloud(files: &[(&str, &str)], hcloud_mirror: &Path) -> Workspace {
        Workspace::dev_override_with_mirror(files, hcloud_mirror, &["hetznercloud/hcloud"])
    }

    /// As [`Workspace::dev_override_with_hcloud`], for any of the providers
    /// `scripts/ensure-peers` mirrors (`namespace/type`, e.g.
    /// `hashicorp/kubernetes`).
    pub fn dev_override_with_mirror(
        files: &[(&str, &str)],
        mirror: &Path,
        providers: &[&str],
    ) -> Workspace {
        let ws = Workspace::with_cli_config(files, "");
        let hct_mirror = ws.tmp.path().join("hct-mirror");
        let platform = format!(
            "{}_{}",
            std::env::consts::OS,
            match std::env::consts::ARCH {
                "x86_64" => "amd64",
                "aarch64" => "arm64",
                other => other,
            }
        );
        let package = hct_mirror
            .join(PROVIDER_SOURCE)
            .join(env!("CARGO_PKG_VERSION"))
            .join(platform);
        std::fs::create_dir_all(&package).expect("create hct mirror");
        std::os::unix::fs::symlink(provider_binary(), package.join("terraform-provider-hct"))
            .expect("link the provider into the hct mirror");
        let mirrored: Vec<String> = providers
            .iter()
            .flat_map(|provider| {
                ["registry.terraform.io", "registry.opentofu.org"]
                    .map(|host| hcl_string(format!("{host}/{provider}")))
            })
            .collect();
        let config = format!(
            "provider_installation {{\n{}  filesystem_mirror {{\n    path    = {}\n    \
             include = [{}]\n  }}\n  filesystem_mirror {{\n    path    = {}\n    \
             include = [{}]\n  }}\n}}\n",
            dev_overrides_block(),
            hcl_string(hct_mirror.to_str().expect("non-UTF-8 temp dir")),
            hcl_string(PROVIDER_SOURCE),
            hcl_string(mirror.to_str().expect("non-UTF-8 mirror path")),
            mirrored.join(", "),
        );
        std::fs::write(&ws.cli_config, config).expect("write CLI config");
        ws
    }

    /// A workspace with the given CLI config file text.
    pub fn with_cli_config(files: &[(&str, &str)], cli_config: &str) -> Workspace {
        let tmp = tempfile::Builder::new()
            .prefix("hct-e2e-")
            .tempdir()
            .expect("create temp dir");
        let dir = tmp.path().join("work");
        std::fs::create_dir(&dir).expect("create workspace dir");
        let cli_config_path = tmp.path().join("cli.tfrc");
        std::fs::write(&cli_config_path, cli_config).expect("write CLI config");
        let ws = Workspace {
            tmp,
            dir,
            cli_config: cli_config_path,
            env: Vec::new(),
        };
        for (name, content) in files {
            ws.write(name, content);
        }
        ws
    }

    /// The Terraform working directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The CLI config file (`TF_CLI_CONFIG_FILE`).
    pub fn cli_config_path(&self) -> &Path {
        &self.cli_config
    }

    /// Writes (or replaces) a file relative to the working directory.
    pub fn write(&self, name: &str, content: &str) {
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dir");
        }
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// Adds an environment variable for every later Terraform command.
    pub fn env(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The `Command` that [`Workspace::terraform`] runs, for callers needing more control.
    ///
    /// Env: inherited, minus every `TF_*` variable except `TF_LOG*` and every
    /// `TOFU_*` one (so a developer's TF_CLI_ARGS, TF_DATA_DIR, TF_PLUGIN_CACHE_DIR,
    /// OpenTofu's TOFU_X_EXPERIMENTAL_RUNTIME, ... cannot leak in), plus
    /// TF_CLI_CONFIG_FILE, TF_IN_AUTOMATION=1, TF_INPUT=0, CHECKPOINT_DISABLE=1 and
    /// the [`Workspace::env`] additions. `-no-color` is added right after the
    /// subcommand for the commands in `NO_COLOR_COMMANDS` (pass it yourself for others).
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(&cli().path, args)
    }

    /// [`Workspace::command`] with the CLI at `path`.
    pub fn command_of(&self, path: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(path);
        cmd.current_dir(&self.dir);
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let tf = key.starts_with("TF_") && !key.starts_with("TF_LOG");
            if tf || key.starts_with("TOFU_") {
                cmd.env_remove(key.as_ref());
            }
        }
        cmd.env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env("CHECKPOINT_DISABLE", "1");
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        let add_no_color = args.first().is_some_and(|c| NO_COLOR_COMMANDS.contains(c))
            && !args.contains(&"-no-color");
        match args.split_first() {
            Some((sub, rest)) if add_no_color => cmd.arg(sub).arg("-no-color").args(rest),
            _ => cmd.args(args),
        };
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Runs `terraform ARGS` in the workspace (see [`Workspace::command`]).
    pub fn terraform(&self, args: &[&str]) -> TfOutput {
        self.terraform_of(&cli().path, args)
    }

    /// [`Workspace::terraform`] with the CLI at `path`.
    pub fn terraform_of(&self, path: &Path, args: &[&str]) -> TfOutput {
        let out = self
            .command_of(path, args)
            .output()
            .unwrap_or_else(|e| panic!("running {} {args:?}: {e}", path.display()));
        TfOutput {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `terraform output -json`, parsed.
    pub fn outputs(&self) -> serde_json::Value {
        let out = self
            .terraform(&["output", "-json"])
            .expect_success("terraform output -json");
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("terraform output -json is not JSON ({e}):\n{out}"))
    }

    /// The text of a file in the working directory (e.g. `.terraform.lock.hcl`).
    pub fn read(&self, name: &str) -> String {
        let path = self.dir.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }
}

/// A static HTTPS file server on `https://127.0.0.1:PORT/`, run by
/// `tests/support/https_server.py` with a fresh test CA; stopped on drop.
pub struct HttpsServer {
    child: Child,
    state: tempfile::TempDir,
    pub port: u16,
    /// PEM file of the CA that signed the server certificate (for `SSL_CERT_FILE`).
    pub ca_pem: PathBuf,
}

impl HttpsServer {
    /// Serves the files under `root`.
    pub fn start(root: &Path) -> HttpsServer {
        let state = tempfile::Builder::new()
            .prefix("hct-https-")
            .tempdir()
            .expect("temp dir");
        let script = repo_root().join("tests/support/https_server.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(root)
            .arg(state.path())
            .stdin(Stdio::piped()) // the server exits when this pipe closes
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("starting python3 {}: {e}", script.display()));
        let mut line = String::new();
        let read = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        // Build the guard first, so that the child is stopped if parsing fails.
        let mut server = HttpsServer {
            child,
            state,
            port: 0,
            ca_pem: PathBuf::new(),
        };
        let ready: serde_json::Value = match read {
            Ok(n) if n > 0 => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("https_server.py printed {line:?}: {e}")),
            other => panic!("https_server.py did not start ({other:?})"),
        };
        server.port = ready["port"].as_u64().expect("port") as u16;
        server.ca_pem = PathBuf::from(ready["ca"].as_str().expect("ca"));
        server
    }

    /// `https://127.0.0.1:PORT/`
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    /// The server's request log so far (for failure messages).
    pub fn access_log(&self) -> String {
        std::fs::read_to_string(self.state.path().join("access.log")).unwrap_or_default()
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // EOF: the server shuts down by itself
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pid of the hct provider process started (directly or not) by `parent`.
pub fn provider_child(parent: u32) -> Option<u32> {
    let mut frontier = vec![parent];
    while let Some(pid) = frontier.pop() {
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...
            let Some((comm, rest)) = stat.split_once(") ") else {
                continue;
            };
            let ppid: u32 = rest
                .split(' ')
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            if ppid == pid {
                if comm.contains("terraform-provi") {
                    return Some(child);
                }
                frontier.push(child);
            }
        }
    }
    None
}

/// `terraform plan -detailed-exitcode` with extra arguments: 0 = no
/// changes, 2 = changes.
pub fn plan_exit_code(ws: &Workspace, args: &[&str]) -> (i32, TfOutput) {
    let out = ws.terraform(&[&["plan", "-detailed-exitcode"], args].concat());
    (out.status.code().unwrap_or(-1), out)
}

/// `terraform apply -auto-approve <args>` with the provider's INFO log;
/// returns the log (stderr), failing the test if the apply failed.
pub fn apply_with_provider_log(ws: &Workspace, args: &[&str], what: &str) -> String {
    let out = ws
        .command(&[&["apply", "-auto-approve"], args].concat())
        .env("TF_LOG_PROVIDER", "INFO")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what} failed:\n{log}");
    log
}

/// Text with the CLI's line wrapping undone (whitespace runs as one space).
pub fn unwrapped(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Polls `check` every second for up to two minutes, for what a real
/// component does in its own time (a controller, a kubelet's next
/// status); panics with the last thing it saw.
pub fn eventually<T, E: std::fmt::Debug>(what: &str, check: impl FnMut() -> Result<T, E>) -> T {
    eventually_within(what, std::time::Duration::from_secs(120), check)
}

/// [`eventually`] within `wait`.
pub fn eventually_within<T, E: std::fmt::Debug>(
    what: &str,
    wait: std::time::Duration,
    mut check: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = std::time::Instant::now() + wait;
    loop {
        match check() {
            Ok(done) => return done,
            Err(last) if std::time::Instant::now() > deadline => {
                panic!("{what}: not within {wait:?}; last seen:\n{last:#?}")
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_secs(1)),
        }
    }
}
