//! The Kubernetes layer end to end: the example cluster applied with
//! `bootstrap_manifests` (a CNI DaemonSet named cilium, and another
//! manifest) by a real Terraform or OpenTofu against hct-sim, then checked
//! with the real kubectl through the sim's proxy: Talos created the
//! manifests' objects at bootstrap, and apply returned with all nine nodes
//! Ready, every kubelet-serving CSR approved by hct's approver, and the
//! `hcloud` Secret holding the token and the network id. A changed
//! manifest is applied (server-side apply, field manager `hct`) and a
//! removed one pruned; a new `ccm_token` updates the Secret, and so does
//! a write-only `ccm_token_wo` with a new version (never in state); a plan after
//! each apply is empty. That test runs on hct-sim's real control plane
//! (etcd, kube-apiserver, kube-controller-manager, the real approver and
//! Hetzner's CCM: `support::sim::start_with_real_kubernetes`), so
//! server-side apply, pruning and the namespace controller are the real
//! ones.
//!
//! A `kubernetes_version` upgrade goes like `talosctl upgrade-k8s`: the
//! control-plane components node by node, then the kubelets node by node,
//! seen in hct's log and in the sim's own timeline of the images each node
//! was given; `/version`, every Node's `kubeletVersion` and the static
//! pods follow, and then the manifests Talos renders (kube-proxy's
//! DaemonSet, switched on here) are applied again for the new release, as
//! Talos' field manager. An upgrade stopped half-way is finished by the next apply
//! without patching a node twice; a skew Kubernetes does not allow fails
//! the plan at `kubernetes_version`. The upgrades run on the emulated
//! API server: the real components are built at one release only.

use crate::peers;
use crate::support;
use crate::support::eventually;

use std::collections::BTreeMap;
use std::path::Path;

use hct_sim::{FaultSpec, SimEvent, SimHandle};
use peers::kubectl::{kubectl, readiness, run, succeeded, through_proxy};
use serde_json::{Value, json};
use support::Workspace;
use support::reference::{CNI_MANIFEST, resource_values, workspace};

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
    let sim = support::sim::start_with_real_kubernetes().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        with_manifests(&ws, &[("cilium", CNI_MANIFEST), ("extras", EXTRAS)]);
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
        let ready = readiness(&nodes);
        assert_eq!(ready.len(), 9);
        assert!(ready.iter().all(|(_, r)| r == "True"), "{ready:?}");
        // hct's approver (the real kubelet-csr-approver, with the settings
        // hct deploys it with) approves every node's kubelet-serving CSR.
        if support::sim::real_addon_or_skip("CSR_APPROVER", "the CSR approvals") {
            eventually("every serving CSR approved", || {
                let csrs = k.json(&["get", "csr"]);
                let items: Vec<Value> = csrs["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|c| c["spec"]["signerName"] == "kubernetes.io/kubelet-serving")
                    .cloned()
                    .collect();
                let approved = items.len() == 9
                    && items.iter().all(|csr| {
                        csr["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
                            && csr["status"]["conditions"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .any(|c| c["type"] == "Approved" && c["status"] == "True")
                    });
                approved.then_some(()).ok_or(csrs)
            });
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
        let changed = CNI_MANIFEST.replace("ipam: kubernetes", "ipam: cluster-pool");
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
        // A namespace goes once the namespace controller has emptied it.
        eventually("the pruned namespace gone", || {
            (k.missing(&["get", "configmap", "extras", "-n", "addons"])
                && k.missing(&["get", "namespace", "addons"]))
            .then_some(())
            .ok_or("still there")
        });
        let ds = k.json(&["get", "daemonset", "cilium", "-n", "kube-system"]);
        assert_eq!(ds["metadata"]["name"], "cilium", "kept");
        plan_is_empty(&ws, "the change");

        // Changed by hand: the refresh finds it, the apply takes it back.
        // A label hct never applied is not hct's and stays.
        k.ok(&[
            "label",
            "--overwrite",
            "daemonset",
            "cilium",
            "-n",
            "kube-system",
            "k8s-app=edited",
            "owner=someone",
        ]);
        k.ok(&["delete", "configmap", "cilium-config", "-n", "kube-system"]);
        let plan = ws.terraform(&["plan", "-detailed-exitcode"]);
        // The CLI wraps long lines.
        let said = support::unwrapped(&format!("{}{}", plan.stdout, plan.stderr));
        assert_eq!(plan.status.code(), Some(2), "{said}");
        assert!(said.contains("kubernetes_drift"), "{said}");
        for line in [
            "Objects of the bootstrap manifests changed outside Terraform",
            "manifest cilium: apps/v1 DaemonSet kube-system/cilium: metadata.labels.k8s-app changed",
            "manifest cilium: v1 ConfigMap kube-system/cilium-config: deleted",
        ] {
            assert!(said.contains(line), "{line}:\n{said}");
        }
        assert!(!said.contains("owner"), "{said}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after edits by hand");
        let ds = k.json(&["get", "daemonset", "cilium", "-n", "kube-system"]);
        assert_eq!(ds["metadata"]["labels"]["k8s-app"], "cilium");
        assert_eq!(ds["metadata"]["labels"]["owner"], "someone");
        let config = k.json(&["get", "configmap", "cilium-config", "-n", "kube-system"]);
        assert_eq!(config["data"], json!({"ipam": "cluster-pool"}));
        plan_is_empty(&ws, "taking the edits back");

        // A new ccm_token updates the Secret.
        let token = "c".repeat(64);
        ws.write("ccm.auto.tfvars", &format!("ccm_token = \"{token}\"\n"));
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply a new ccm_token");
        assert_eq!(hcloud_secret(&k), (token, network.clone()));
        plan_is_empty(&ws, "the new token");

        // Write-only: the token reaches the Secret, never the state; a new
        // one goes with a new version.
        std::fs::remove_file(ws.path().join("ccm.auto.tfvars")).unwrap();
        for (version, token) in [(1, "d".repeat(64)), (2, "e".repeat(64))] {
            ws.write(
                "ccm_wo_override.tf",
                &format!(
                    "resource \"hct_cluster\" \"this\" {{\n  ccm_token_wo = \"{token}\"\n  ccm_token_wo_version = {version}\n}}\n"
                ),
            );
            ws.terraform(&["apply", "-auto-approve"])
                .expect_success(&format!("apply ccm_token_wo version {version}"));
            assert_eq!(hcloud_secret(&k), (token.clone(), network.clone()));
            let state = std::fs::read_to_string(ws.path().join("terraform.tfstate")).unwrap();
            assert!(!state.contains(&token), "the write-only token is in state");
            plan_is_empty(&ws, &format!("ccm_token_wo version {version}"));
        }
    });
    sim.shutdown().await.unwrap();
}

/// `kubernetes_version` from a variable (on the settings' resource: the
/// example is in the parallel form).
pub(crate) fn with_kubernetes_version(ws: &Workspace, version: &str) {
    ws.write(
        "kubernetes.tf",
        &format!("variable \"kubernetes_version\" {{\n  type    = string\n  default = \"{version}\"\n}}\n"),
    );
    ws.write(
        "kubernetes_override.tf",
        "resource \"hct_cluster_secrets\" \"this\" {\n  kubernetes_version = var.kubernetes_version\n}\n",
    );
}

/// kube-proxy on (hct's configs turn it off for Cilium), through the
/// control planes' config patches (Talos v1.14's `KubeProxyConfig`): Talos
/// then renders its DaemonSet.
fn with_kube_proxy(ws: &Workspace) {
    ws.write(
        "kube_proxy_override.tf",
        "resource \"hct_cluster\" \"this\" {\n  config_patches = [yamlencode({ apiVersion = \"v1alpha1\", kind = \"KubeProxyConfig\", enabled = true })]\n}\n",
    );
}

/// The image of the kube-proxy DaemonSet and whether Talos' field manager
/// applied it (server-side apply, as `talosctl upgrade-k8s` does).
fn kube_proxy(k: &Kubectl<'_>) -> (String, bool) {
    let ds = k.json(&[
        "get",
        "daemonset",
        "-n",
        "kube-system",
        "kube-proxy",
        "--show-managed-fields",
    ]);
    let image = ds["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap()
        .to_string();
    let applied_by_talos = ds["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|f| f["manager"] == "talos" && f["operation"] == "Apply");
    (image, applied_by_talos)
}

/// kubectl with the cluster's admin kubeconfig through the sim's proxy.
fn kubectl_for<'a>(sim: &SimHandle, ws: &Workspace, dir: &'a Path) -> Kubectl<'a> {
    let outputs = ws.outputs();
    let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap();
    let endpoint = outputs["endpoint"]["value"].as_str().unwrap();
    let path = dir.join("kubeconfig");
    std::fs::write(&path, through_proxy(kubeconfig, endpoint, &sim.proxy_url())).unwrap();
    Kubectl {
        binary: kubectl(),
        dir,
        kubeconfig: path,
    }
}

/// `apply -auto-approve <args>` with the provider's INFO log: (succeeded,
/// log).
fn apply_logged(ws: &Workspace, args: &[&str]) -> (bool, String) {
    let out = ws
        .command(&[&["apply", "-auto-approve", "-no-color"], args].concat())
        .env("TF_LOG_PROVIDER", "INFO")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), log)
}

/// The nodes named in log lines with `start` and `done`, in order: "start
/// <node>" and "done <node>".
fn node_steps(log: &str, start: &str, done: &str) -> Vec<String> {
    log.lines()
        .filter_map(|line| {
            let node = line.split("node=").nth(1)?.split_whitespace().next()?;
            let step = if line.contains(start) {
                "start"
            } else if line.contains(done) {
                "done"
            } else {
                return None;
            };
            Some(format!("{step} {}", node.trim_matches('"')))
        })
        .collect()
}

/// Every node's step ends before the next one's starts.
fn assert_one_at_a_time(steps: &[String]) {
    for pair in steps.chunks(2) {
        let node = pair[0].strip_prefix("start ").expect("starts first");
        assert_eq!(pair.get(1), Some(&format!("done {node}")), "{steps:#?}");
    }
}

/// The sim's timeline of the Kubernetes images each node was given: (node,
/// kube-apiserver tag, kubelet tag), in order.
type Images = Vec<(String, Option<String>, Option<String>)>;

fn image_timeline(events: &mut tokio::sync::broadcast::Receiver<SimEvent>) -> Images {
    let mut timeline = Vec::new();
    loop {
        match events.try_recv() {
            Ok(SimEvent::KubernetesImages {
                name,
                api_server,
                kubelet,
                ..
            }) => timeline.push((name, api_server, kubelet)),
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => return timeline,
            Err(e) => panic!("the sim's timeline: {e}"),
        }
    }
}

/// What each node's config names now: (kube-apiserver tag, kubelet tag).
fn configured_versions(sim: &SimHandle) -> BTreeMap<String, (Option<String>, Option<String>)> {
    sim.inspect(|w| {
        w.servers
            .values()
            .filter_map(|s| {
                let config = s.talos.as_ref()?.node.config()?;
                Some((
                    s.name.clone(),
                    (
                        config.kubernetes_version.clone(),
                        config.kubelet_version.clone(),
                    ),
                ))
            })
            .collect()
    })
}

/// The upgrade's timeline from `from` to `to` went as `upgrade-k8s` goes:
/// each control plane got the new control-plane images once (its kubelet
/// still on `from`), all before any kubelet moved; then each control
/// plane's kubelet once, then each worker's once.
fn assert_upgrade_order(timeline: &Images, from: &str, to: &str) {
    let some = |v: &str| Some(v.to_string());
    let cps = ["noreturn-cp-1", "noreturn-cp-2", "noreturn-cp-3"];
    let components: Vec<&str> = timeline
        .iter()
        .filter(|(_, api, kubelet)| *api == some(to) && *kubelet == some(from))
        .map(|(n, ..)| n.as_str())
        .collect();
    assert_eq!(
        components, cps,
        "control-plane components in order, once each: {timeline:#?}"
    );
    let kubelets: Vec<&str> = timeline
        .iter()
        .filter(|(_, _, kubelet)| *kubelet == some(to))
        .map(|(n, ..)| n.as_str())
        .collect();
    assert_eq!(kubelets.len(), 9, "each kubelet moved once: {timeline:#?}");
    assert_eq!(
        &kubelets[..3],
        cps,
        "control planes' kubelets first: {timeline:#?}"
    );
    let mut workers = kubelets[3..].to_vec();
    workers.sort_unstable();
    workers.dedup();
    assert_eq!(workers.len(), 6, "{timeline:#?}");
    assert_eq!(timeline.len(), 12, "no other image change: {timeline:#?}");
    let first_kubelet = timeline
        .iter()
        .position(|(_, _, kubelet)| *kubelet == some(to))
        .unwrap();
    assert_eq!(first_kubelet, 3, "{timeline:#?}");
}

/// After an upgrade to `to`: `/version`, every Node's kubelet (Ready when
/// `ready`), every control plane's static pods.
fn assert_cluster_runs(k: &Kubectl<'_>, to: &str, ready: bool) {
    let version = k.json(&["version"]);
    assert_eq!(version["serverVersion"]["gitVersion"], to, "{version:#}");
    let nodes = k.json(&["get", "nodes"]);
    let items = nodes["items"].as_array().unwrap();
    assert_eq!(items.len(), 9);
    for node in items {
        assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], to, "{node:#}");
        if ready {
            let condition = node["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Ready")
                .unwrap();
            assert_eq!(condition["status"], "True", "{node:#}");
        }
    }
    let pods = k.json(&[
        "get",
        "pods",
        "-n",
        "kube-system",
        "-l",
        "tier=control-plane",
    ]);
    let images: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap())
        .collect();
    assert_eq!(images.len(), 9, "{images:?}");
    assert!(
        images.iter().all(|i| i.ends_with(&format!(":{to}"))),
        "{images:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_upgrade_moves_the_control_plane_then_each_kubelet() {
    let sim = support::sim::start().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        with_manifests(&ws, &[("cilium", CNI_MANIFEST)]);
        with_kubernetes_version(&ws, "v1.34.1");
        with_kube_proxy(&ws);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply on v1.34.1");
        let dir = tempfile::tempdir().unwrap();
        let k = kubectl_for(&sim, &ws, dir.path());
        assert_cluster_runs(&k, "v1.34.1", true);
        // Talos created kube-proxy at bootstrap (not applied since).
        assert_eq!(
            kube_proxy(&k),
            ("registry.k8s.io/kube-proxy:v1.34.1".to_string(), false)
        );

        // Skews Kubernetes does not allow fail the plan.
        for (wanted, why) in [
            ("v1.33.0", "an older minor release"),
            ("v1.32.4", "an older minor release"),
        ] {
            let out = ws
                .terraform(&[
                    "plan",
                    "-no-color",
                    "-var",
                    &format!("kubernetes_version={wanted}"),
                ])
                .expect_failure("a downgrade");
            let words = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words.contains("Unsupported Kubernetes upgrade"), "{out}");
            assert!(words.contains(why), "{out}");
            assert!(words.contains("Set kubernetes_version to v1.34.x"), "{out}");
        }
        let out = ws
            .terraform(&[
                "plan",
                "-no-color",
                "-var",
                "kubernetes_version=v1.35.2",
                "-var",
                "talos_version=v1.13.9",
            ])
            .expect_failure("Talos and Kubernetes at once");
        assert!(
            out.stderr
                .contains("Upgrade Talos and Kubernetes in separate"),
            "{out}"
        );
        let upgrade = ["-var", "kubernetes_version=v1.35.2"];
        let plan = ws
            .terraform(&[&["plan", "-no-color"][..], &upgrade].concat())
            .expect_success("plan the upgrade");
        let words = plan.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("Kubernetes v1.34.1 to v1.35.2"), "{plan}");
        assert!(words.contains("one control plane at a time"), "{plan}");

        let mut events = sim.events();
        let (ok, log) = apply_logged(&ws, &upgrade);
        assert!(ok, "the upgrade failed:\n{log}");
        let timeline = image_timeline(&mut events);
        assert_upgrade_order(&timeline, "v1.34.1", "v1.35.2");
        let components = node_steps(
            &log,
            "upgrading the control-plane components",
            "control-plane components upgraded",
        );
        assert_eq!(components.len(), 6, "{components:#?}\n{log}");
        assert_one_at_a_time(&components);
        let kubelets = node_steps(&log, "upgrading kubelet", "kubelet upgraded");
        assert_eq!(kubelets.len(), 18, "{kubelets:#?}\n{log}");
        // One at a time within the control plane and within the pools. A
        // pool waits for the control planes' kubelets by the same rule as
        // their own upgrade, polling on its own: the last control plane's
        // "kubelet upgraded" line may come after a pool's first start, so
        // the order across them is the sim's timeline's to judge (above).
        let (control_plane, pools): (Vec<String>, Vec<String>) = kubelets
            .iter()
            .cloned()
            .partition(|step| step.contains(" noreturn-cp-"));
        assert_one_at_a_time(&control_plane);
        assert_one_at_a_time(&pools);
        let last_cp_start = kubelets
            .iter()
            .rposition(|step| step.starts_with("start noreturn-cp-"))
            .unwrap();
        let first_pool_start = kubelets
            .iter()
            .position(|step| step.starts_with("start ") && !step.contains(" noreturn-cp-"))
            .unwrap();
        assert!(last_cp_start < first_pool_start, "{kubelets:#?}");
        assert_cluster_runs(&k, "v1.35.2", true);
        // Then the manifests Talos renders were synced, after the kubelets.
        assert_eq!(
            kube_proxy(&k),
            ("registry.k8s.io/kube-proxy:v1.35.2".to_string(), true)
        );
        let synced = log
            .find("Talos' bootstrap manifests synced")
            .unwrap_or_else(|| panic!("no manifest sync in the log:\n{log}"));
        let before: Vec<String> =
            node_steps(&log[..synced], "upgrading kubelet", "kubelet upgraded")
                .into_iter()
                .filter(|step| step.starts_with("done noreturn-cp-"))
                .collect();
        assert_eq!(
            before.len(),
            3,
            "every control plane's kubelet moves before the sync:\n{log}"
        );
        with_kubernetes_version(&ws, "v1.35.2");
        plan_is_empty(&ws, "the upgrade");
    });
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_upgrade_stopped_half_way_is_finished_without_patching_a_node_twice() {
    let sim = support::sim::start().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        with_kubernetes_version(&ws, "v1.34.1");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply on v1.34.1");
        let mut events = sim.events();
        // noreturn-cp-2's API server never gets ready: the upgrade stops
        // there, after its components were moved.
        sim.add_fault(
            FaultSpec::parse(r#"{"talos": "apiserver_down", "server": "noreturn-cp-2"}"#).unwrap(),
        );
        let upgrade = ["-var", "kubernetes_version=v1.35.2"];
        let (ok, log) = apply_logged(
            &ws,
            &[&upgrade[..], &["-var", "update_timeout=8s"]].concat(),
        );
        assert!(!ok, "the upgrade should time out:\n{log}");
        let words = log.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("noreturn-cp-2: waiting for its static pods to run Kubernetes v1.35.2"),
            "{log}"
        );
        let halfway = configured_versions(&sim);
        let v = |api: &str, kubelet: &str| (Some(api.to_string()), Some(kubelet.to_string()));
        assert_eq!(
            halfway["noreturn-cp-1"],
            v("v1.35.2", "v1.34.1"),
            "{halfway:?}"
        );
        assert_eq!(
            halfway["noreturn-cp-2"],
            v("v1.35.2", "v1.34.1"),
            "{halfway:?}"
        );
        assert_eq!(
            halfway["noreturn-cp-3"],
            v("v1.34.1", "v1.34.1"),
            "{halfway:?}"
        );
        assert!(
            halfway
                .iter()
                .filter(|(n, _)| !n.contains("-cp-"))
                .all(|(_, (_, kubelet))| kubelet.as_deref() == Some("v1.34.1")),
            "no kubelet moves before the control plane: {halfway:?}"
        );

        sim.clear_faults();
        let (ok, log) = apply_logged(&ws, &upgrade);
        assert!(ok, "finishing the upgrade failed:\n{log}");
        // Over both applies: every node got each new image once.
        let timeline = image_timeline(&mut events);
        assert_upgrade_order(&timeline, "v1.34.1", "v1.35.2");
        let components = node_steps(
            &log,
            "upgrading the control-plane components",
            "control-plane components upgraded",
        );
        assert_eq!(
            components,
            ["start noreturn-cp-3", "done noreturn-cp-3"],
            "{log}"
        );
        let dir = tempfile::tempdir().unwrap();
        let k = kubectl_for(&sim, &ws, dir.path());
        assert_cluster_runs(&k, "v1.35.2", false);
        // The finishing apply also synced what Talos renders (CoreDNS).
        let coredns = k.json(&[
            "get",
            "deployment",
            "-n",
            "kube-system",
            "coredns",
            "--show-managed-fields",
        ]);
        assert!(
            coredns["metadata"]["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| f["manager"] == "talos" && f["operation"] == "Apply"),
            "{coredns:#}"
        );
        with_kubernetes_version(&ws, "v1.35.2");
        plan_is_empty(&ws, "finishing the upgrade");
    });
    sim.shutdown().await.unwrap();
}
