//! The Kubernetes layer end to end: the example cluster applied with
//! `bootstrap_manifests` (a CNI DaemonSet named cilium, and another
//! manifest) by a real Terraform or OpenTofu against hct-sim, then checked
//! with the real kubectl through the sim's proxy: Talos created the
//! manifests' objects at bootstrap, and apply returned with all nine nodes
//! Ready. A changed manifest is applied (server-side apply, field manager
//! `hct`) and a removed one pruned; a plan after each apply is empty.

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
        let cluster = resource_values(&ws, "hct_cluster.this");
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
    });
    sim.shutdown().await.unwrap();
}
