//! The real kubectl against hct-sim: which binary, a kubeconfig pointed
//! through the sim's SOCKS5 proxy, and running it with nothing else of the
//! environment (a dead `HTTPS_PROXY`, no `KUBECONFIG`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A proxy nothing listens on, for `HTTPS_PROXY`: a kubectl that ignored
/// `proxy-url` fails there instead of reaching for the private network.
const DEAD_PROXY: &str = "socks5://127.0.0.1:9";

/// `$HCT_KUBECTL`, or the kubectl `scripts/ensure-peers` builds (pinned,
/// from the published Kubernetes Go modules).
pub fn kubectl() -> PathBuf {
    if let Some(path) = std::env::var_os("HCT_KUBECTL").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "HCT_KUBECTL={} is not a file; point it at a kubectl binary",
            path.display()
        );
        return path;
    }
    super::peers().path("KUBECTL")
}

/// `kubeconfig` with its cluster's `server` set to `server` and a
/// `proxy-url` beside it. hct writes one cluster entry, `server:` on a line
/// of its own.
pub fn through_proxy(kubeconfig: &str, server: &str, proxy: &str) -> String {
    let servers = kubeconfig
        .lines()
        .filter(|l| l.trim_start().starts_with("server: "))
        .count();
    assert_eq!(
        servers, 1,
        "one cluster entry in hct's kubeconfig:\n{kubeconfig}"
    );
    let mut out = String::new();
    for line in kubeconfig.lines() {
        match line.trim_start().strip_prefix("server: ") {
            Some(_) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(&format!("{indent}server: {server}\n"));
                out.push_str(&format!("{indent}proxy-url: {proxy}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The `kubeconfig` output of a workspace's `outputs` (`terraform output
/// -json`), through `proxy` to its `endpoint` output, written to `dir`.
pub fn kubeconfig_file(outputs: &serde_json::Value, proxy: &str, dir: &Path) -> PathBuf {
    let endpoint = outputs["endpoint"]["value"].as_str().unwrap();
    let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap();
    let path = dir.join("kubeconfig");
    std::fs::write(&path, through_proxy(kubeconfig, endpoint, proxy)).unwrap();
    path
}

/// Runs kubectl with only this kubeconfig and a dead `HTTPS_PROXY`.
pub fn run(kubectl: &Path, dir: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(kubectl);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .arg("--request-timeout=30s")
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env("HTTPS_PROXY", DEAD_PROXY)
        .env("https_proxy", DEAD_PROXY)
        .env("HOME", dir)
        .stdin(Stdio::null());
    command
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", kubectl.display()))
}

pub fn succeeded(what: &str, out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A ConfigMap `name` in `default` (with `data.answer` when given),
/// applied server-side.
pub fn apply_config_map(
    kubectl: &Path,
    dir: &Path,
    kubeconfig: &Path,
    name: &str,
    answer: Option<&str>,
) {
    let data = answer.map_or(String::new(), |a| format!("data:\n  answer: {a:?}\n"));
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &file,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n{data}"
        ),
    )
    .unwrap();
    let args = ["apply", "--server-side", "-f", file.to_str().unwrap()];
    succeeded(
        &format!("apply {name}"),
        run(kubectl, dir, kubeconfig, &args),
    );
}

/// `data.answer` of the ConfigMap `name` in `default`.
pub fn config_map_answer(kubectl: &Path, dir: &Path, kubeconfig: &Path, name: &str) -> String {
    let args = ["get", "configmap", name, "-o", "jsonpath={.data.answer}"];
    succeeded(&format!("get {name}"), run(kubectl, dir, kubeconfig, &args))
        .trim()
        .to_string()
}

/// How many nodes are Ready, through this kubeconfig.
pub fn ready_nodes(kubectl: &Path, dir: &Path, kubeconfig: &Path) -> usize {
    let args = ["get", "nodes", "-o", "json"];
    let nodes: Value = serde_json::from_str(&succeeded(
        "get nodes",
        run(kubectl, dir, kubeconfig, &args),
    ))
    .unwrap();
    nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| {
            n["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count()
}

/// The Ready condition of each node in `kubectl get nodes -o json`.
pub fn readiness(nodes: &Value) -> Vec<(String, String)> {
    nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let ready = n["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Ready")
                .map(|c| c["status"].as_str().unwrap().to_string())
                .unwrap_or_default();
            (n["metadata"]["name"].as_str().unwrap().to_string(), ready)
        })
        .collect()
}
