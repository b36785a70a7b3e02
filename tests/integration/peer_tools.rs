//! The peer tools of `scripts/ensure-peers` work as the other tests expect:
//! OpenTofu of the pinned version, and Hetzner's hcloud provider installed
//! by OpenTofu from the filesystem mirror alone (no registry is reachable),
//! answering for its schema; kubectl of the pinned Kubernetes version,
//! taking a kubeconfig whose cluster is reached through a SOCKS5 `proxy-url`
//! (the kind of proxy hct itself reaches the nodes through).

use crate::peers;

use std::path::Path;
use std::process::{Command, Output};

/// Runs the peers' tofu in `dir` with only the peers' CLI config.
fn tofu(dir: &Path, args: &[&str]) -> Output {
    let peers = peers::peers();
    let out = Command::new(peers.path("TOFU"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("TF_CLI_CONFIG_FILE", peers.path("TF_CLI_CONFIG_FILE"))
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .output()
        .expect("running tofu");
    assert!(
        out.status.success(),
        "tofu {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn tofu_is_the_pinned_version() {
    let peers = peers::peers();
    let dir = tempfile::tempdir().unwrap();
    let out = tofu(dir.path(), &["version", "-json"]);
    let version: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(version["terraform_version"], peers.var("TOFU_VERSION"));
    assert_eq!(version["platform"], "linux_amd64");
}

#[test]
fn tofu_installs_the_hcloud_provider_from_the_mirror() {
    let peers = peers::peers();
    let provider_version = peers.var("HCLOUD_PROVIDER_VERSION");
    for host in ["registry.terraform.io", "registry.opentofu.org"] {
        let mirrored = peers
            .path("HCLOUD_PROVIDER_MIRROR")
            .join(format!(
                "{host}/hetznercloud/hcloud/{provider_version}/linux_amd64"
            ))
            .join(format!("terraform-provider-hcloud_v{provider_version}"));
        assert!(mirrored.is_file(), "no {}", mirrored.display());
    }

    let dir = tempfile::tempdir().unwrap();
    // Both source addresses users write: the short one (OpenTofu's
    // registry) and Terraform's, as many existing modules pin it.
    for (name, source) in [
        ("short", "hetznercloud/hcloud"),
        ("terraform", "registry.terraform.io/hetznercloud/hcloud"),
    ] {
        let work = dir.path().join(name);
        std::fs::create_dir(&work).unwrap();
        std::fs::write(
            work.join("main.tf"),
            format!(
                "terraform {{\n  required_providers {{\n    hcloud = {{\n      source  = \"{source}\"\n      \
                 version = \"= {provider_version}\"\n    }}\n  }}\n}}\n\n\
                 provider \"hcloud\" {{\n  token = \"{token}\"\n}}\n\n\
                 resource \"hcloud_network\" \"private\" {{\n  name     = \"private\"\n  \
                 ip_range = \"10.0.0.0/16\"\n}}\n",
                token = "0".repeat(64)
            ),
        )
        .unwrap();
        tofu(&work, &["init", "-input=false", "-no-color"]);
        tofu(&work, &["validate", "-no-color"]);
        let schema = tofu(&work, &["providers", "schema", "-json"]);
        let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
        let schemas = schema["provider_schemas"].as_object().unwrap();
        let (address, provider) = schemas.iter().next().expect("one provider");
        assert!(address.ends_with("/hetznercloud/hcloud"), "{address}");
        for resource in ["hcloud_server", "hcloud_network", "hcloud_network_subnet"] {
            assert!(
                provider["resource_schemas"].get(resource).is_some(),
                "{address} has no {resource}"
            );
        }
        let lock = std::fs::read_to_string(work.join(".terraform.lock.hcl")).unwrap();
        assert!(
            lock.contains(&format!("version     = \"{provider_version}\"")),
            "{lock}"
        );
    }
}

/// Runs the peers' kubectl with `HOME` in `dir` (its cache goes there) and
/// nothing else from the environment but `PATH`.
fn kubectl(dir: &Path, args: &[&str]) -> Output {
    Command::new(peers::peers().path("KUBECTL"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .output()
        .expect("running kubectl")
}

fn succeeded(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "kubectl {what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn kubectl_is_the_pinned_version_and_takes_a_socks5_proxy_url() {
    let peers = peers::peers();
    let want = format!("v{}", peers.var("KUBECTL_VERSION"));
    let kubectl_path = peers.path("KUBECTL");
    assert!(
        kubectl_path.ends_with(format!("kubectl-{want}")),
        "KUBECTL={}",
        kubectl_path.display()
    );
    let dir = tempfile::tempdir().unwrap();

    let out = succeeded(
        kubectl(dir.path(), &["version", "--client", "-o", "json"]),
        "version",
    );
    let version: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let client = &version["clientVersion"];
    assert_eq!(client["gitVersion"], want.as_str(), "{version}");
    let minor = want.split('.').nth(1).unwrap();
    assert_eq!(client["major"], "1", "{version}");
    assert_eq!(client["minor"], minor, "{version}");

    // A cluster reached through a SOCKS5 proxy, as hct reaches the nodes.
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\n\
         clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n    \
         proxy-url: socks5://127.0.0.1:1\n    insecure-skip-tls-verify: true\n\
         contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
         current-context: c\n\
         users:\n- name: u\n  user:\n    token: t\n",
    )
    .unwrap();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let out = succeeded(
        kubectl(
            dir.path(),
            &[
                "--kubeconfig",
                kubeconfig,
                "config",
                "view",
                "--minify",
                "-o",
                "json",
            ],
        ),
        "config view",
    );
    let config: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        config["clusters"][0]["cluster"]["proxy-url"], "socks5://127.0.0.1:1",
        "{config}"
    );

    // kubectl checks a proxy-url's scheme when it connects (not in
    // `config view`): it takes socks5 and dials through the proxy. Nothing
    // listens on port 1, so the request fails at that dial, never reaching
    // 10.0.0.1 (-v=6 shows the underlying error).
    let get = |kubeconfig: &str| {
        let out = kubectl(
            dir.path(),
            &[
                "--kubeconfig",
                kubeconfig,
                "--request-timeout=10s",
                "-v=6",
                "get",
                "--raw",
                "/version",
            ],
        );
        assert!(!out.status.success(), "kubectl get reached a server");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = get(kubeconfig);
    assert!(!stderr.contains("invalid 'proxy-url'"), "{stderr}");
    assert!(
        stderr.contains("proxyconnect tcp: dial tcp 127.0.0.1:1:"),
        "kubectl get did not fail at the SOCKS5 proxy: {stderr}"
    );
    // The check is real: a scheme it does not take is refused.
    let ftp = dir.path().join("kubeconfig-ftp");
    std::fs::write(
        &ftp,
        std::fs::read_to_string(kubeconfig)
            .unwrap()
            .replace("socks5://", "ftp://"),
    )
    .unwrap();
    let stderr = get(ftp.to_str().unwrap());
    assert!(stderr.contains("invalid 'proxy-url'"), "{stderr}");
}
