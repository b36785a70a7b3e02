//! The Kubernetes layer end to end: the example cluster applied with
//! `bootstrap_manifests` (a CNI DaemonSet named cilium, and another
//! manifest) by a real Terraform or OpenTofu against hct-sim, then checked
//! with the real kubectl through the sim's proxy: Talos created the
//! manifests' objects at bootstrap, and apply returned with all nine nodes
//! Ready, every kubelet-serving CSR approved by hct's approver, and the
//! `hcloud` Secret holding the token and the network id. A changed
//! manifest is applied (server-side apply, field manager `hct`) and a
//! removed one pruned; a new `ccm_token` updates the Secret; a plan after
//! each apply is empty.

mod peers;
mod support;

use std::path::Path;

use peers::kubectl::{kubectl, run, succeeded, through_proxy};
use serde_json::{Value, json};
use support::Workspace;
use support::reference::{resource_values, workspace};

const CILIUM: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cilium
  namespace: kube-system
  labels:
    k8s-app: cilium
spec:
  selector:
    matchLabels:
      k8s-app: cilium
  template:
    metadata:
      labels:
        k8s-app: cilium
    spec:
      containers:
        - name: cilium-agent
          image: quay.io/cilium/cilium:v1.18.4
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cilium-config
  namespace: kube-system
data:
  ipam: kubernetes
  tunnel: disabled
";

const EXTRAS: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: addons
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extras
  namespace: addons
data:
  hello: world
";

/// The example with `bootstrap_manifests` from a variable.
fn with_manifests(ws: &Workspace, manifests: &[(&str, &str)]) {
    ws.write(
        "manifests.tf",
        "variable \"bootstrap_manifests\" {\n  type = list(object({ name = string, contents = string }))\n}\n",
    );
    ws.write(
        "manifests_override.tf",
        "resource \"hct_cluster\" \"this\" {\n  bootstrap_manifests = var.bootstrap_manifests\n}\n",
    );
    let list: Vec<Value> = manifests
        .iter()
        .map(|(name, contents)| json!({"name": name, "contents": contents}))
        .collect();
    ws.write(
        "manifests.auto.tfvars.json",
        &json!({"bootstrap_manifests": list}).to_string(),
    );
}

fn plan_is_empty(ws: &Workspace, after: &str) {
    let out = ws.terraform(&["plan", "-detailed-exitcode"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a plan after {after} is empty:\n{}\n{}",
        out.stdout,
        out.stderr
    );
}

struct Kubectl<'a> {
    binary: std::path::PathBuf,
    dir: &'a Path,
    kubeconfig: std::path::PathBuf,
}

impl Kubectl<'_> {
    fn ok(&self, args: &[&str]) -> String {
        succeeded(
            &format!("kubectl {}", args.join(" ")),
            run(&self.binary, self.dir, &self.kubeconfig, args),
        )
    }

    fn json(&self, args: &[&str]) -> Value {
        let text = self.ok(&[args, &["-o", "json"]].concat());
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn missing(&self, args: &[&str]) -> bool {
        let out = run(&self.binary, self.dir, &self.kubeconfig, args);
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("NotFound")
    }
}

/// The `hcloud` Secret's token and network, decoded.
fn hcloud_secret(k: &Kubectl) -> (String, String) {
    use base64::Engine;
    let secret = k.json(&["get", "secret", "hcloud", "-n", "kube-system"]);
    let field = |name: &str| {
        let text = secret["data"][name]
            .as_str()
            .unwrap_or_else(|| panic!("{secret:#}"));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap();
        String::from_utf8(bytes).unwrap()
    };
    (field("token"), field("network"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_manifests_make_ready_nodes_and_follow_changes() {
    let binary = kubectl();
    let sim = support::sim::start().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        with_manifests(&ws, &[("cilium", CILIUM), ("extras", EXTRAS)]);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        plan_is_empty(&ws, "the create");

        let outputs = ws.outputs();
        let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap();
        let endpoint = outputs["endpoint"]["value"].as_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, through_proxy(kubeconfig, endpoint, &sim.proxy_url())).unwrap();
        let k = Kubectl {
            binary,
            dir: dir.path(),
            kubeconfig: path,
        };

        // Talos made the manifests' objects at bootstrap; apply waited for
        // every node to be Ready (the CNI runs).
        let ds = k.json(&["get", "daemonset", "cilium", "-n", "kube-system"]);
        assert_eq!(ds["metadata"]["labels"]["k8s-app"], "cilium");
        let extras = k.json(&["get", "configmap", "extras", "-n", "addons"]);
        assert_eq!(extras["data"]["hello"], "world");
        let nodes = k.json(&["get", "nodes"]);
        let items = nodes["items"].as_array().unwrap();
        assert_eq!(items.len(), 9);
        for node in items {
            let ready = node["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Ready")
                .unwrap();
            assert_eq!(ready["status"], "True", "{node:#}");
        }
        // hct's approver approved every node's kubelet-serving CSR.
        let csrs = k.json(&["get", "csr"]);
        let csrs = csrs["items"].as_array().unwrap();
        assert_eq!(csrs.len(), 9, "one per node");
        for csr in csrs {
            assert_eq!(csr["spec"]["signerName"], "kubernetes.io/kubelet-serving");
            let approved = csr["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Approved" && c["status"] == "True");
            assert!(approved, "{csr:#}");
        }
        let approver = k.json(&[
            "get",
            "deployment",
            "kubelet-csr-approver",
            "-n",
            "kube-system",
        ]);
        let image = approver["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap();
        assert!(image.contains("@sha256:"), "pinned: {image}");
        // The hcloud Secret: the provider's token by default, the network id.
        let network = support::sim::seeded_network(&sim).to_string();
        assert_eq!(
            hcloud_secret(&k),
            (sim.token().to_string(), network.clone())
        );
        let cluster = resource_values(&ws, "hct_cluster.this");
        assert_eq!(cluster["kubernetes_synced"], true);
        assert_eq!(
            cluster["bootstrap_manifest_objects"],
            json!({
                "cilium": [
                    "apps/v1 DaemonSet kube-system/cilium",
                    "v1 ConfigMap kube-system/cilium-config"
                ],
                "extras": ["v1 Namespace /addons", "v1 ConfigMap addons/extras"],
            })
        );

        // Day 2: a changed manifest is applied, a removed one pruned.
        let changed = CILIUM.replace("ipam: kubernetes", "ipam: cluster-pool");
        let changed = changed.replace("  tunnel: disabled\n", "");
        with_manifests(&ws, &[("cilium", &changed)]);
        let plan = ws.terraform(&["plan", "-no-color"]).expect_success("plan");
        assert!(
            plan.stdout.contains("ipam: cluster-pool"),
            "{}",
            plan.stdout
        );
        assert!(plan.stdout.contains("\"extras\""), "{}", plan.stdout);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply the changed manifests");
        let config = k.json(&[
            "get",
            "configmap",
            "cilium-config",
            "-n",
            "kube-system",
            "--show-managed-fields",
        ]);
        assert_eq!(
            config["data"],
            json!({"ipam": "cluster-pool"}),
            "{config:#}"
        );
        let managers: Vec<&str> = config["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["manager"].as_str())
            .collect();
        assert!(managers.contains(&"hct"), "{managers:?}");
        assert!(k.missing(&["get", "configmap", "extras", "-n", "addons"]));
        assert!(k.missing(&["get", "namespace", "addons"]));
        let ds = k.json(&["get", "daemonset", "cilium", "-n", "kube-system"]);
        assert_eq!(ds["metadata"]["name"], "cilium", "kept");
        plan_is_empty(&ws, "the change");

        // A new ccm_token updates the Secret.
        let token = "c".repeat(64);
        ws.write("ccm.auto.tfvars", &format!("ccm_token = \"{token}\"\n"));
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply a new ccm_token");
        assert_eq!(hcloud_secret(&k), (token, network));
        plan_is_empty(&ws, "the new token");
    });
    sim.shutdown().await.unwrap();
}
