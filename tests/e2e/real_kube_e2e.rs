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

use crate::peers::kubectl::{kubeconfig_file, kubectl, readiness, run, succeeded};
use crate::support;
use crate::support::eventually;
use crate::support::reference::{CNI_MANIFEST, resource_values, workspace};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_cluster_runs_on_a_real_kubernetes_control_plane() {
    // Under both CLIs: see start_on_real_kubernetes.
    let kubectl = kubectl();
    let sim = support::sim::start_on_real_kubernetes().await;
    let ws = workspace(&sim);
    ws.write(
        "cni.auto.tfvars.json",
        &serde_json::json!({ "cni_manifest": CNI_MANIFEST }).to_string(),
    );
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let plan = resource_values(&ws, "data.hct_network_plan.this");
        let dir = tempfile::tempdir().unwrap();
        let path = kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir.path());
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

        // Every node Ready: a worker whose TLS bootstrap waited for a busy
        // controller-manager may register a pass later than the rest.
        let nodes: Value = eventually("9 Ready nodes", || {
            let nodes: Value =
                serde_json::from_str(&kubectl_ok("get nodes", &["get", "nodes", "-o", "json"]))
                    .unwrap();
            let ready = readiness(&nodes);
            let ready = ready.len() == 9 && ready.iter().all(|(_, r)| r == "True");
            ready.then_some(nodes.clone()).ok_or(nodes)
        });
        // One real etcd member per control plane, as the emulation lists
        // them.
        support::sim::assert_real_etcd_follows(&sim, "the apply");
        let items = nodes["items"].as_array().unwrap();
        let pods: Ipv4Net = plan["pod_cidr"].as_str().unwrap().parse().unwrap();
        let mask = plan["pod_cidr_mask_size"].as_u64().unwrap() as u8;
        for node in items {
            let name = node["metadata"]["name"].as_str().unwrap();
            // Ready (above) only once the node has its pod range, as a CNI
            // that takes it from the Node (Cilium's kubernetes IPAM) does.
            let range: Ipv4Net = node["spec"]["podCIDR"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} has no podCIDR: {node:#}"))
                .parse()
                .unwrap();
            assert_eq!(range.prefix_len(), mask, "{name}");
            assert!(pods.contains(&range), "{name}: {range} outside {pods}");
            let ip: Ipv4Addr = internal_ip(node).parse().unwrap();
            assert!(
                !range.contains(&ip),
                "{name}: its own IP {ip} in its pod range {range}"
            );
        }

        // The kubelets' serving CSRs, filed with their own credentials:
        // approved by the real kubelet-csr-approver with hct's settings,
        // signed by the real controller-manager.
        let approver = support::sim::real_addon_or_skip("CSR_APPROVER", "the CSR approvals");
        let of_signer = |csrs: &Value, signer: &str| -> Vec<Value> {
            csrs["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["spec"]["signerName"] == signer)
                .cloned()
                .collect()
        };
        let csrs = eventually("every serving CSR approved and signed", || {
            let csrs: Value =
                serde_json::from_str(&kubectl_ok("get csr", &["get", "csr", "-o", "json"]))
                    .unwrap();
            let serving = of_signer(&csrs, "kubernetes.io/kubelet-serving");
            let done = serving.len() == 9
                && (!approver
                    || serving.iter().all(|c| {
                        c["status"]["certificate"].is_string()
                            && c["status"]["conditions"][0]["type"] == "Approved"
                    }));
            done.then_some(csrs.clone()).ok_or(csrs)
        });
        eprintln!("{}", kubectl_ok("get csr", &["get", "csr"]));
        // The kubelets' client certificates came from their TLS bootstrap:
        // kube-controller-manager approved and signed those.
        let client_csrs = of_signer(&csrs, "kubernetes.io/kube-apiserver-client-kubelet");
        assert!(client_csrs.len() >= 9, "{csrs:#}");
        assert!(
            client_csrs.iter().all(|c| c["spec"]["username"]
                .as_str()
                .is_some_and(|u| u.starts_with("system:bootstrap:"))),
            "{csrs:#}"
        );
        assert!(
            !approver
                || csrs["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|c| c["spec"]["signerName"] == "kubernetes.io/kubelet-serving")
                    .all(|c| {
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
                    // What only the CCM writes: the server's type as the
                    // instance-type label. The private IP stays the
                    // InternalIP (hct's network, by the Secret's network id).
                    let typed = n["metadata"]["labels"]["node.kubernetes.io/instance-type"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("cx"));
                    let internal = typed && internal_ip(n).starts_with("10.0.128.");
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

/// The real components as judges of what Talos lets through: hct's own
/// configs with a wrong Kubernetes setting written in after hct made them
/// (so hct's checks never see it), booted on hct-sim's real control plane
/// beside an unmutated pair (`mutations::boot_pair`), each cluster with
/// hct's `hcloud` Secret so that Hetzner's CCM runs for it. What each real
/// component makes of it is read from `/_sim/state` (`kubernetes`: each
/// ring's status and its Nodes as the real API server lists them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_components_fail_what_talos_lets_through() {
    use crate::mutations::{Target, boot_pair, kind_doc};
    if !support::sim::real_kubernetes_wanted() {
        return eprintln!(
            "SKIPPED: HCT_SIM_KUBERNETES=emulated (no CLI runs here: scripts/test's Terraform pass runs it)"
        );
    }
    let sim = hct_sim::Sim::start(hct_sim::SimOptions {
        rate_limit: 1_000_000,
        kubernetes: Some(support::sim::real_kubernetes()),
        ..hct_sim::SimOptions::seeded_fast()
    })
    .await
    .unwrap();
    let network = support::sim::seeded_network(&sim);
    let secret = hct::cluster::addons::hcloud_secret(sim.token(), network).to_string();
    let manifests = [("hcloud".to_string(), secret)];
    let talos = "v1.14.0";
    let ccm = support::sim::real_addon_or_skip("HCLOUD_CCM", "the node name judged by the CCM");

    let (cp, worker) = boot_pair(&sim, 1, talos, None, &manifests).await;
    let renamed = |d: &mut Vec<serde_yaml_ng::Value>| {
        kind_doc(d, "HostnameConfig")["hostname"] = "not-its-server".into()
    };
    let (_, renamed_worker) = boot_pair(
        &sim,
        2,
        talos,
        Some((Target::Workers, &renamed)),
        &manifests,
    )
    .await;
    let wide_mask = |d: &mut Vec<serde_yaml_ng::Value>| {
        kind_doc(d, "KubeControllerManagerConfig")["extraArgs"]["node-cidr-mask-size-ipv4"] =
            "16".into()
    };
    let (masked_cp, _) = boot_pair(
        &sim,
        3,
        talos,
        Some((Target::ControlPlane, &wide_mask)),
        &manifests,
    )
    .await;

    let ring_of = |state: &Value, node: &str| -> Option<Value> {
        state["kubernetes"]
            .as_object()?
            .values()
            .find(|ring| {
                ring["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|n| n["name"] == node)
            })
            .cloned()
    };
    tokio::task::block_in_place(|| {
        // The unmutated pair: initialised by the real CCM, pod ranges from
        // the real controller-manager.
        eventually("the unmutated pair initialised", || {
            let state = sim.state_json();
            let ring = ring_of(&state, &cp).ok_or_else(|| state["kubernetes"].clone())?;
            let nodes = ring["nodes"].as_array().unwrap();
            let done = nodes.len() == 2
                && nodes
                    .iter()
                    .all(|n| n["podCIDR"].is_string() && (!ccm || n["providerID"].is_string()))
                && nodes.iter().any(|n| n["name"] == worker.as_str());
            done.then_some(()).ok_or(ring)
        });

        // A node named unlike its server: the real CCM finds no server of
        // that name, so the Node keeps the uninitialized taint and gets no
        // providerID (the "silent" failure of the seed).
        if ccm {
            // Its CCM runs: the control plane of the same cluster, named
            // as its server, is initialised; then the renamed node has
            // had as long.
            eventually("the renamed node's cluster initialised", || {
                let state = sim.state_json();
                let ring = ring_of(&state, "not-its-server").ok_or(state["kubernetes"].clone())?;
                let cp = ring["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n["name"] != "not-its-server" && n["providerID"].is_string());
                cp.then_some(()).ok_or(ring)
            });
            // From then on, whenever it is listed it is uninitialised: no
            // providerID, the taint kept. (The CCM's node lifecycle
            // controller also deletes it while NotReady, as it names no
            // server; its kubelet registers it again.)
            let mut seen = 0;
            for _ in 0..10 {
                let state = sim.state_json();
                let node = ring_of(&state, "not-its-server").and_then(|ring| {
                    ring["nodes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|n| n["name"] == "not-its-server")
                        .cloned()
                });
                if let Some(node) = node {
                    seen += 1;
                    assert!(node["providerID"].is_null(), "{node:#}");
                    assert!(
                        node["taints"].as_array().unwrap().contains(&Value::from(
                            "node.cloudprovider.kubernetes.io/uninitialized"
                        )),
                        "{node:#}"
                    );
                }
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
            assert!(
                seen > 0,
                "{renamed_worker} never registered as not-its-server"
            );
            eprintln!("{renamed_worker} as not-its-server: seen uninitialised {seen} times of 10");
        }

        // A controller-manager told to give each node a range wider than
        // the pod range: the real one refuses to run, and the ring's
        // control plane fails with its words.
        let failed = eventually("the wide mask refused", || {
            let state = sim.state_json();
            let failed: Vec<Value> = state["kubernetes"]
                .as_object()
                .into_iter()
                .flat_map(|r| r.values())
                .filter(|r| r["status"] == "failed")
                .cloned()
                .collect();
            (!failed.is_empty())
                .then_some(failed)
                .ok_or(state["kubernetes"].clone())
        });
        eprintln!("{masked_cp}'s control plane: {failed:#?}");
        // Only that cluster's: the other two serve.
        let state = sim.state_json();
        let rings = state["kubernetes"].as_object().unwrap();
        assert_eq!(rings.len(), 3, "{rings:#?}");
        assert_eq!(failed.len(), 1, "{rings:#?}");
        assert_eq!(
            rings.values().filter(|r| r["status"] == "ready").count(),
            2,
            "{rings:#?}"
        );
        let error = failed[0]["error"].as_str().unwrap();
        assert!(error.contains("kube-controller-manager exited"), "{error}");
        assert!(
            error.contains(
                "mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size"
            ),
            "{error}"
        );
    });
    sim.shutdown().await.unwrap();
}

/// A Node's InternalIP (the CCM lists its Hostname first).
fn internal_ip(node: &Value) -> String {
    node["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == "InternalIP")
        .and_then(|a| a["address"].as_str())
        .unwrap_or_default()
        .to_string()
}
