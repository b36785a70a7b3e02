//! The real `kubectl` against the cluster hct builds on hct-sim: the
//! example cluster applied with a real Terraform, hct's kubeconfig taken
//! from state and pointed through the sim's SOCKS5 proxy (`proxy-url`),
//! then `kubectl get --raw /readyz` and `kubectl version -o json` against
//! the cluster endpoint and each control plane's IP.
//!
//! A second test drives the Kubernetes objects the way an operator would: `kubectl get nodes -o json` (nine nodes named as their
//! servers, NotReady without a CNI), `kubectl apply --server-side -f` of a
//! CNI DaemonSet (the nodes turn Ready), `kubectl get csr`, `kubectl
//! certificate approve`, `kubectl delete`.
//!
//! Both run on hct-sim's real control plane (etcd, kube-apiserver,
//! kube-controller-manager from `scripts/ensure-peers`), so what kubectl
//! is answered is the real server's.
//!
//! kubectl is `$HCT_KUBECTL`, else the one `scripts/ensure-peers` builds;
//! the test fails when there is none.

use crate::peers;
use crate::support;
use crate::support::eventually;

use peers::kubectl::{kubectl, readiness, run, succeeded, through_proxy};
use serde_json::Value;
use support::Workspace;
use support::reference::{CNI_MANIFEST, state_attribute, workspace};

/// The example with no CNI and no approver: kubectl itself makes the nodes
/// Ready and approves a CSR here.
fn bare_workspace(sim: &hct_sim::SimHandle) -> Workspace {
    let ws = workspace(sim);
    ws.write(
        "bare_override.tf",
        "resource \"hct_cluster\" \"this\" {\n  bootstrap_manifests = []\n  \
         kubelet_serving_cert_approval = false\n}\n",
    );
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reaches_every_control_plane_through_the_proxy() {
    let kubectl = kubectl();
    let sim = support::sim::start_with_real_kubernetes().await;
    let ws = bare_workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let outputs = ws.outputs();
        let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap().to_string();
        let endpoint = outputs["endpoint"]["value"].as_str().unwrap().to_string();
        let kubernetes = state_attribute(&ws, "hct_cluster.this", "kubernetes_version");
        let mut servers = vec![endpoint];
        for node in outputs["control_plane_nodes"]["value"].as_array().unwrap() {
            servers.push(format!("https://{}:6443", node["ip"].as_str().unwrap()));
        }
        assert_eq!(servers.len(), 4, "the endpoint and 3 control planes");

        let dir = tempfile::tempdir().unwrap();
        for (n, server) in servers.iter().enumerate() {
            let path = dir.path().join(format!("kubeconfig-{n}"));
            std::fs::write(&path, through_proxy(&kubeconfig, server, &sim.proxy_url())).unwrap();

            let readyz = succeeded(
                &format!("kubectl get --raw /readyz at {server}"),
                run(&kubectl, dir.path(), &path, &["get", "--raw", "/readyz"]),
            );
            assert_eq!(readyz.trim(), "ok", "{server}");

            let version = succeeded(
                &format!("kubectl version -o json at {server}"),
                run(&kubectl, dir.path(), &path, &["version", "-o", "json"]),
            );
            let version: Value = serde_json::from_str(&version)
                .unwrap_or_else(|e| panic!("kubectl version -o json: {e}\n{version}"));
            assert_eq!(
                version["serverVersion"]["gitVersion"],
                Value::from(format!("v{}", kubernetes.trim_start_matches('v'))),
                "{server}: {version:#}"
            );
            assert_eq!(version["serverVersion"]["platform"], "linux/amd64");

            // A path the server does not serve: kubectl shows the Status.
            let missing = run(
                &kubectl,
                dir.path(),
                &path,
                &["get", "--raw", "/nonexistent"],
            );
            assert!(!missing.status.success(), "{server}");
            let stderr = String::from_utf8_lossy(&missing.stderr);
            eprintln!("kubectl get --raw /nonexistent at {server}: {stderr}");
            assert!(
                stderr.contains("the server could not find the requested resource"),
                "{server}: {stderr}"
            );
        }
    });
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_sees_nodes_applies_approves_and_deletes() {
    let kubectl = kubectl();
    let sim = support::sim::start_with_real_kubernetes().await;
    let ws = bare_workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let outputs = ws.outputs();
        let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap().to_string();
        let endpoint = outputs["endpoint"]["value"].as_str().unwrap().to_string();
        let kubernetes = state_attribute(&ws, "hct_cluster.this", "kubernetes_version");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(
            &path,
            through_proxy(&kubeconfig, &endpoint, &sim.proxy_url()),
        )
        .unwrap();
        let kubectl_ok =
            |what: &str, args: &[&str]| succeeded(what, run(&kubectl, dir.path(), &path, args));

        // Every kubelet registers (on its next status, against a real
        // API server).
        let nodes: Value = eventually("9 nodes registered", || {
            let nodes: Value =
                serde_json::from_str(&kubectl_ok("get nodes", &["get", "nodes", "-o", "json"]))
                    .unwrap();
            (nodes["items"].as_array().unwrap().len() == 9)
                .then_some(nodes.clone())
                .ok_or(nodes)
        });
        let mut ready = readiness(&nodes);
        ready.sort();
        assert!(
            ready.iter().all(|(_, r)| r == "False"),
            "no CNI yet: {ready:?}"
        );
        let mut servers: Vec<String> = outputs["control_plane_nodes"]["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["name"].as_str().unwrap().to_string())
            .collect();
        for pool in outputs["worker_nodes"]["value"]
            .as_object()
            .unwrap()
            .values()
        {
            servers.extend(
                pool.as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n["name"].as_str().unwrap().to_string()),
            );
        }
        servers.sort();
        let names: Vec<String> = ready.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names, servers, "nodes are named as their servers");
        for node in nodes["items"].as_array().unwrap() {
            assert_eq!(
                node["status"]["nodeInfo"]["kubeletVersion"],
                Value::from(format!("v{}", kubernetes.trim_start_matches('v'))),
                "{node:#}"
            );
            let internal = node["status"]["addresses"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["type"] == "InternalIP")
                .and_then(|a| a["address"].as_str())
                .unwrap_or_else(|| panic!("no InternalIP: {node:#}"));
            assert!(internal.starts_with("10.0.128."), "{node:#}");
        }
        // The control planes' mirror pods, posted by their kubelets.
        eventually("3 kube-apiserver mirror pods", || {
            let pods = kubectl_ok(
                "get static pods",
                &["get", "pods", "-n", "kube-system", "-o", "name"],
            );
            let count = pods
                .lines()
                .filter(|l| l.starts_with("pod/kube-apiserver-"))
                .count();
            (count == 3).then_some(()).ok_or(pods)
        });

        // Server-side apply of a CNI: the nodes turn Ready.
        let manifest = dir.path().join("cni.yaml");
        std::fs::write(&manifest, CNI_MANIFEST).unwrap();
        let manifest = manifest.to_str().unwrap();
        let applied = kubectl_ok(
            "apply --server-side",
            &["apply", "--server-side", "-f", manifest],
        );
        assert!(
            applied.contains("daemonset.apps/cilium serverside-applied"),
            "{applied}"
        );
        let again = kubectl_ok(
            "apply --server-side again",
            &["apply", "--server-side", "-f", manifest],
        );
        assert!(
            again.contains("configmap/cilium-config serverside-applied"),
            "{again}"
        );
        let ds: Value = serde_json::from_str(&kubectl_ok(
            "get ds",
            &[
                "get",
                "daemonset",
                "cilium",
                "-n",
                "kube-system",
                "-o",
                "json",
                "--show-managed-fields",
            ],
        ))
        .unwrap();
        assert_eq!(ds["metadata"]["managedFields"][0]["manager"], "kubectl");
        eventually("every node Ready", || {
            let nodes: Value =
                serde_json::from_str(&kubectl_ok("get nodes", &["get", "nodes", "-o", "json"]))
                    .unwrap();
            let ready = readiness(&nodes);
            ready
                .iter()
                .all(|(_, r)| r == "True")
                .then_some(())
                .ok_or(ready)
        });
        let selected = kubectl_ok(
            "get nodes -l",
            &[
                "get",
                "nodes",
                "-l",
                "node-role.kubernetes.io/control-plane",
                "-o",
                "name",
            ],
        );
        assert_eq!(selected.lines().count(), 3, "{selected}");

        // Kubelet serving CSRs: one per node, pending until approved.
        let csrs: Value =
            serde_json::from_str(&kubectl_ok("get csr", &["get", "csr", "-o", "json"])).unwrap();
        // (On the real control plane the kubelets' TLS bootstrap also filed
        // client certificate requests, which kube-controller-manager
        // approved.)
        let serving = "kubernetes.io/kubelet-serving";
        let csrs: Vec<Value> = csrs["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["spec"]["signerName"] == serving)
            .cloned()
            .collect();
        assert_eq!(csrs.len(), 9);
        let table = kubectl_ok("get csr (table)", &["get", "csr"]);
        eprintln!("kubectl get csr:\n{table}");
        // The serving requests' rows (`csr-…`; the TLS bootstrap's are
        // `node-csr-…`), whatever columns the server's table has.
        assert_eq!(
            table.lines().filter(|l| l.starts_with("csr-")).count(),
            9,
            "{table}"
        );
        for csr in &csrs {
            assert!(csr["status"].get("conditions").is_none(), "{csr:#}");
        }
        let first = csrs[0]["metadata"]["name"].as_str().unwrap().to_string();
        let approved = kubectl_ok("certificate approve", &["certificate", "approve", &first]);
        assert!(approved.contains("approved"), "{approved}");
        let csr: Value = serde_json::from_str(&kubectl_ok(
            "get csr",
            &["get", "csr", &first, "-o", "json"],
        ))
        .unwrap();
        assert_eq!(
            csr["status"]["conditions"][0]["type"], "Approved",
            "{csr:#}"
        );

        // Delete: gone, and a second delete is a NotFound.
        let deleted = kubectl_ok(
            "delete",
            &["delete", "configmap", "cilium-config", "-n", "kube-system"],
        );
        assert!(deleted.contains("deleted"), "{deleted}");
        let missing = run(
            &kubectl,
            dir.path(),
            &path,
            &["get", "configmap", "cilium-config", "-n", "kube-system"],
        );
        assert!(!missing.status.success());
        let stderr = String::from_utf8_lossy(&missing.stderr);
        assert!(
            stderr.contains("NotFound") || stderr.contains("not found"),
            "{stderr}"
        );
    });
    sim.shutdown().await.unwrap();
}
