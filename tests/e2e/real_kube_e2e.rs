//! The reference cluster on hct-sim with a real Kubernetes control plane
//! behind it (etcd, kube-apiserver and kube-controller-manager built by
//! `scripts/ensure-peers`, see `talos::kube_control_plane` in hct-sim),
//! applied by a real Terraform or OpenTofu and judged by the real
//! components and kubectl: the nodes hct's configs describe register with
//! the real API server, kube-controller-manager gives each its pod range
//! from the plan's pod CIDR at the planned mask, the CNI hct applies turns
//! them Ready, the real kubelet-csr-approver approves the kubelets'
//! serving certificates with the settings hct deploys it with, and
//! Hetzner's real cloud controller manager initialises every node from
//! hct's `hcloud` Secret against hct-sim's Hetzner API.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde_json::Value;

use crate::peers::kubectl::{kubectl, run, succeeded, through_proxy};
use crate::support;
use crate::support::eventually;
use crate::support::reference::{CNI_MANIFEST, resource_values, workspace};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_cluster_runs_on_a_real_kubernetes_control_plane() {
    let kubectl = kubectl();
    let sim = support::sim::start_with_real_kubernetes().await;
    let ws = workspace(&sim);
    ws.write(
        "cni.auto.tfvars.json",
        &serde_json::json!({ "cni_manifest": CNI_MANIFEST }).to_string(),
    );
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let outputs = ws.outputs();
        let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap().to_string();
        let endpoint = outputs["endpoint"]["value"].as_str().unwrap().to_string();
        let plan = resource_values(&ws, "data.hct_network_plan.this");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(
            &path,
            through_proxy(&kubeconfig, &endpoint, &sim.proxy_url()),
        )
        .unwrap();
        let kubectl_ok =
            |what: &str, args: &[&str]| succeeded(what, run(&kubectl, dir.path(), &path, args));

        // The real server's table: its columns, not a client-side guess.
        let table = kubectl_ok("get nodes", &["get", "nodes"]);
        eprintln!("{table}");
        let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(
            header,
            ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            "{table}"
        );

        let nodes: Value =
            serde_json::from_str(&kubectl_ok("get nodes", &["get", "nodes", "-o", "json"]))
                .unwrap();
        let items = nodes["items"].as_array().unwrap();
        assert_eq!(items.len(), 9, "{table}");
        let pods: Ipv4Net = plan["pod_cidr"].as_str().unwrap().parse().unwrap();
        let mask = plan["pod_cidr_mask_size"].as_u64().unwrap() as u8;
        for node in items {
            let name = node["metadata"]["name"].as_str().unwrap();
            let ready = node["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Ready")
                .unwrap();
            // Ready only once the node has its pod range, as a CNI that
            // takes it from the Node (Cilium's kubernetes IPAM) does.
            assert_eq!(ready["status"], "True", "{name}: {ready}");
            let range: Ipv4Net = node["spec"]["podCIDR"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} has no podCIDR: {node:#}"))
                .parse()
                .unwrap();
            assert_eq!(range.prefix_len(), mask, "{name}");
            assert!(pods.contains(&range), "{name}: {range} outside {pods}");
            let ip: Ipv4Addr = node["status"]["addresses"][0]["address"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                !range.contains(&ip),
                "{name}: its own IP {ip} in its pod range {range}"
            );
        }

        // The kubelets' serving CSRs, filed with their own credentials:
        // approved by the real kubelet-csr-approver with hct's settings,
        // signed by the real controller-manager.
        let approver = support::sim::real_addon_or_skip("CSR_APPROVER", "the CSR approvals");
        let csrs = eventually("every serving CSR approved and signed", || {
            let csrs: Value =
                serde_json::from_str(&kubectl_ok("get csr", &["get", "csr", "-o", "json"]))
                    .unwrap();
            let serving: Vec<&Value> = csrs["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["spec"]["signerName"] == "kubernetes.io/kubelet-serving")
                .collect();
            let done = serving.len() == 9
                && (!approver
                    || serving.iter().all(|c| {
                        c["status"]["certificate"].is_string()
                            && c["status"]["conditions"][0]["type"] == "Approved"
                    }));
            done.then_some(csrs.clone()).ok_or(csrs)
        });
        eprintln!("{}", kubectl_ok("get csr", &["get", "csr"]));
        assert!(
            !approver
                || csrs["items"].as_array().unwrap().iter().all(|c| {
                    c["status"]["conditions"][0]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("kubelet-csr-approver")
                }),
            "{csrs:#}"
        );

        // Hetzner's real cloud controller manager, with hct's hcloud
        // Secret, against hct-sim's Hetzner API: every node gets its
        // server's providerID and loses the uninitialized taint.
        let servers = support::sim::server_ids(&sim);
        if !support::sim::real_addon_or_skip("HCLOUD_CCM", "the cloud controller manager's checks")
        {
            return;
        }
        eventually(
            "every node initialised by the cloud controller manager",
            || {
                let nodes: Value =
                    serde_json::from_str(&kubectl_ok("get nodes", &["get", "nodes", "-o", "json"]))
                        .unwrap();
                let done = nodes["items"].as_array().unwrap().iter().all(|n| {
                    let name = n["metadata"]["name"].as_str().unwrap();
                    let tainted = n["spec"]["taints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|t| t["key"] == "node.cloudprovider.kubernetes.io/uninitialized");
                    // The private IP as InternalIP: hct's network, through
                    // the Secret's network id.
                    let internal = n["status"]["addresses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|a| {
                            a["type"] == "InternalIP"
                                && a["address"]
                                    .as_str()
                                    .is_some_and(|ip| ip.starts_with("10.0.128."))
                        });
                    servers
                        .get(name)
                        .is_some_and(|id| n["spec"]["providerID"] == format!("hcloud://{id}"))
                        && !tainted
                        && internal
                });
                done.then_some(()).ok_or(nodes)
            },
        );
    });
    sim.shutdown().await.unwrap();
}
