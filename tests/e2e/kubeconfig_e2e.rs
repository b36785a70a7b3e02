//! Credentials for other providers, end to end: HashiCorp's kubernetes
//! provider (built from its Go module by `scripts/ensure-peers`) configured
//! from `ephemeral "hct_kubeconfig"`, and once from `hct_cluster`'s
//! `kubernetes_admin`, creates a namespace on hct-sim in the same apply that
//! creates the cluster, through the sim's SOCKS5 proxy (`proxy_url`). The
//! real kubectl sees the namespace; a plan afterwards is empty (the
//! ephemeral resource is opened again, the namespace read back); removing the
//! namespace from the configuration deletes it. Real Terraform or OpenTofu
//! (`HCT_CLI`).

use crate::peers;
use crate::support;

use hct_sim::SimHandle;
use peers::kubectl::{kubectl, run, through_proxy};
use support::Workspace;
use support::reference::{EXAMPLE, resource_values};

/// A proxy nothing listens on: a client that ignored `proxy_url` fails
/// there instead of reaching for the private network.
const DEAD_PROXY: &str = "socks5://127.0.0.1:9";

/// Where the kubernetes provider's credentials come from.
enum Source {
    Ephemeral,
    ClusterAttributes,
}

fn provider_block(source: &Source) -> String {
    let from = match source {
        Source::Ephemeral => "ephemeral.hct_kubeconfig.admin",
        Source::ClusterAttributes => "hct_cluster.this.kubernetes_admin",
    };
    // The kubernetes provider refuses a configuration that is partly known
    // (a proxy but no host yet) while the cluster does not exist: the
    // proxy must be unknown exactly when the credentials are.
    let proxy = match source {
        Source::Ephemeral => "ephemeral.hct_kubeconfig.admin.proxy_url",
        Source::ClusterAttributes => {
            "hct_cluster.this.kubernetes_admin.host == null ? null : var.proxy_url"
        }
    };
    let ephemeral = match source {
        Source::Ephemeral => {
            "ephemeral \"hct_kubeconfig\" \"admin\" {\n  worker_join     = hct_cluster.this.worker_join\n  machine_secrets = hct_cluster.this.machine_secrets\n  validity        = \"30m\"\n}\n\n"
        }
        Source::ClusterAttributes => "",
    };
    format!(
        r#"{ephemeral}provider "kubernetes" {{
  host                   = {from}.host
  cluster_ca_certificate = {from}.cluster_ca_certificate
  client_certificate     = {from}.client_certificate
  client_key             = {from}.client_key
  proxy_url              = {proxy}
}}
"#
    )
}

fn namespace(name: &str) -> String {
    format!(
        "resource \"kubernetes_namespace_v1\" \"{name}\" {{\n  metadata {{\n    name = \"{name}\"\n  }}\n}}\n"
    )
}

/// The example (one small pool) with the kubernetes provider beside hct.
fn workspace(sim: &SimHandle, source: &Source) -> Workspace {
    let peers = peers::peers();
    let version = peers.var("KUBERNETES_PROVIDER_VERSION");
    let main = EXAMPLE.replacen(
        "  required_providers {\n",
        &format!(
            "  required_providers {{\n    kubernetes = {{\n      source  = \"hashicorp/kubernetes\"\n      version = \"= {version}\"\n    }}\n"
        ),
        1,
    );
    assert_ne!(main, EXAMPLE, "the example has a required_providers block");
    let mut ws = Workspace::dev_override_with_mirror(
        &[("main.tf", &main)],
        &peers.path("KUBERNETES_PROVIDER_MIRROR"),
        &["hashicorp/kubernetes"],
    );
    ws.write(
        "pools.auto.tfvars",
        "worker_pools = {\n  general = { cidr = \"10.0.128.64/27\", nodes = 1, sku = \"cx23\", labels = {} }\n}\n",
    );
    ws.write(
        "network.auto.tfvars",
        &format!("network_id = {}\n", support::sim::seeded_network(sim)),
    );
    ws.write(
        "kubernetes.tf",
        &format!(
            "variable \"proxy_url\" {{\n  type = string\n}}\n\n{}",
            provider_block(source)
        ),
    );
    ws.write("namespace.tf", &namespace("apps"));
    ws.write(
        "proxy.auto.tfvars.json",
        &serde_json::json!({"proxy_url": sim.proxy_url()}).to_string(),
    );
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token())
        .env("HCT_TALOS_PROXY", sim.proxy_url())
        .env("HCT_POLL_INTERVAL", "50ms")
        .env("HTTPS_PROXY", DEAD_PROXY)
        .env("https_proxy", DEAD_PROXY)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    ws
}

fn kubectl_sees(ws: &Workspace, sim: &SimHandle, namespace: &str) -> bool {
    let cluster = resource_values(ws, "hct_cluster.this");
    let kubeconfig = cluster["kubeconfig"].as_str().expect("kubeconfig in state");
    let endpoint = cluster["endpoint"].as_str().expect("endpoint in state");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, through_proxy(kubeconfig, endpoint, &sim.proxy_url())).unwrap();
    let out = run(
        &kubectl(),
        dir.path(),
        &path,
        &["get", "namespace", namespace, "-o", "json"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let object: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(object["metadata"]["name"], namespace);
        true
    } else {
        assert!(
            stderr.contains("NotFound"),
            "kubectl get namespace {namespace}: {stderr}"
        );
        false
    }
}

fn namespace_in_the_same_apply(sim: &SimHandle, source: Source) -> Workspace {
    let ws = workspace(sim, &source);
    ws.terraform(&["init", "-no-color"]).expect_success("init");
    let out = ws
        .terraform(&["apply", "-auto-approve", "-no-color"])
        .expect_success("apply the cluster and the namespace");
    assert!(
        out.stdout
            .contains("kubernetes_namespace_v1.apps: Creation complete"),
        "{out}"
    );
    assert!(kubectl_sees(&ws, sim, "apps"), "the namespace exists");
    let plan = ws.terraform(&["plan", "-detailed-exitcode", "-no-color"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "a plan after the apply is empty:\n{plan}"
    );

    // Removed from the configuration: deleted through the API.
    ws.write("namespace.tf", "");
    ws.terraform(&["apply", "-auto-approve", "-no-color"])
        .expect_success("apply without the namespace");
    assert!(!kubectl_sees(&ws, sim, "apps"), "the namespace is gone");
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ephemeral_kubeconfig_configures_the_kubernetes_provider_in_the_same_apply() {
    // Ephemeral resources are each CLI's own: see start_on_real_kubernetes.
    let sim = support::sim::start_on_real_kubernetes().await;
    tokio::task::block_in_place(|| {
        let ws = namespace_in_the_same_apply(&sim, Source::Ephemeral);
        // Nothing of the ephemeral kubeconfig is in state.
        let state = ws.read("terraform.tfstate");
        assert!(!state.contains("hct_kubeconfig"), "{state}");
        expired_credentials_are_refused(&ws, &sim);
    });
}

/// The kubeconfig the ephemeral resource mints (`validity`, here 30
/// minutes), issued 40 minutes ago: the real API server refuses it as it
/// will refuse today's once it expires.
fn expired_credentials_are_refused(ws: &Workspace, sim: &SimHandle) {
    use hct::cluster::settings::WorkerJoin;
    use std::time::{Duration, SystemTime};
    let cluster = resource_values(ws, "hct_cluster.this");
    let settings = WorkerJoin::decode(cluster["worker_join"].as_str().unwrap())
        .and_then(|join| join.settings())
        .unwrap();
    let secrets =
        hct::talos::Secrets::from_yaml(cluster["machine_secrets"].as_str().unwrap()).unwrap();
    let endpoint = cluster["endpoint"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    let get_namespaces = |minutes_ago: u64| {
        let issued = SystemTime::now() - Duration::from_secs(minutes_ago * 60);
        let kubeconfig = hct::talos::client_config::admin_kubeconfig_valid_for(
            &settings.cluster_name,
            &settings.plan,
            &secrets,
            issued,
            Duration::from_secs(30 * 60),
        )
        .unwrap();
        let text = through_proxy(kubeconfig.as_str(), endpoint, &sim.proxy_url());
        std::fs::write(&path, text).unwrap();
        run(&kubectl(), dir.path(), &path, &["get", "namespaces"])
    };
    // The same credentials, issued 20 minutes ago: still good.
    let fresh = get_namespaces(20);
    assert!(
        fresh.status.success(),
        "{}",
        String::from_utf8_lossy(&fresh.stderr)
    );
    let expired = get_namespaces(40);
    let stderr = String::from_utf8_lossy(&expired.stderr);
    assert!(
        !expired.status.success() && stderr.contains("You must be logged in to the server"),
        "an expired certificate: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_attributes_configure_the_kubernetes_provider_in_the_same_apply() {
    let sim = support::sim::start_with_real_kubernetes().await;
    tokio::task::block_in_place(|| {
        let ws = namespace_in_the_same_apply(&sim, Source::ClusterAttributes);
        let cluster = resource_values(&ws, "hct_cluster.this");
        let credentials = hct::talos::client_config::kubeconfig_credentials(
            cluster["kubeconfig"].as_str().unwrap(),
        )
        .unwrap();
        let admin = &cluster["kubernetes_admin"];
        assert_eq!(admin["host"], credentials.host.as_str());
        assert_eq!(admin["client_key"], credentials.client_key.as_str());
        assert_eq!(
            admin["client_certificate"],
            credentials.client_certificate.as_str()
        );
    });
}
