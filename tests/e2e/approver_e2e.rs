//! hct's kubelet-serving CSR approver where one node name begins another:
//! the real kubelet-csr-approver (hct-sim's emulation of it when the
//! emulated API server stands in) approves the control plane's serving
//! certificate and leaves the longer name's pending, its own node's
//! request included, until a person approves it (`cluster::addons`); on
//! the real control plane, also the request the shorter-named node's
//! kubelet could file for it, which the approver approved before.

use std::path::Path;

use serde_json::Value;

use crate::mutations::{Pair, boot, small_plan_and};
use crate::peers::kubectl::{kubectl, run, succeeded};
use crate::support;
use crate::support::eventually;
use crate::support::reference::{pools, workspace};
use hct::cluster::addons::{APPROVER_MANIFEST, approver_manifest, shadowed_names};
use hct::talos::Secrets;
use hct::talos::client_config::{admin_kubeconfig, with_proxy_url};

const SERVING: &str = "kubernetes.io/kubelet-serving";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_another_node_name_begins_waits_for_a_person() {
    let real = support::sim::real_kubernetes_wanted();
    if real && !support::sim::real_addon_or_skip("CSR_APPROVER", "the approver's verdicts") {
        return;
    }
    let sim = hct_sim::Sim::start(hct_sim::SimOptions {
        rate_limit: 1_000_000,
        kubernetes: real.then(support::sim::real_kubernetes),
        ..hct_sim::SimOptions::seeded_fast()
    })
    .await
    .unwrap();
    // Pools `general` and `general-1`: judged1-general-1 begins
    // judged1-general-1-1, the worker booted here.
    let plan = small_plan_and(1, Some("general-1"));
    assert_eq!(shadowed_names("judged1", &plan), ["judged1-general-1-1"]);
    let secrets = Secrets::for_checking().unwrap();
    let manifests = [(
        APPROVER_MANIFEST.to_string(),
        approver_manifest("judged1", &plan),
    )];
    let pair = Pair {
        index: 1,
        plan: &plan,
        pool: "general-1",
        secrets: &secrets,
    };
    let (cp, worker) = boot(&sim, &pair, "v1.14.0", None, &manifests).await;
    assert_eq!(worker, "judged1-general-1-1");

    let admin = admin_kubeconfig("judged", &plan, &secrets).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        with_proxy_url(admin.as_str(), &sim.proxy_url()).unwrap(),
    )
    .unwrap();
    let kubectl = kubectl();
    tokio::task::block_in_place(|| {
        let csrs = || serving_csrs(&kubectl, dir.path(), &path);
        let of = |csrs: &[Value], node: &str| -> Option<Value> {
            csrs.iter()
                .find(|c| c["spec"]["username"] == format!("system:node:{node}"))
                .cloned()
        };
        // The approver runs with hct's settings: the control plane's
        // request is approved (and signed), and the worker's has been filed.
        let filed = eventually("the control plane's approved, the worker's filed", || {
            let all = csrs();
            // (The emulated API server approves but signs nothing.)
            let cp_done = of(&all, &cp).is_some_and(|c| {
                c["status"]["conditions"][0]["type"] == "Approved"
                    && (!real || c["status"]["certificate"].is_string())
            });
            match of(&all, &worker) {
                Some(w) if cp_done => Ok(w),
                _ => Err(all),
            }
        });
        // What the approver could not tell from it: the kubelet of the
        // node whose name begins the worker's (judged1-general-1, planned,
        // not booted) asking for the worker's name and IP. Filed by the
        // admin as that node (impersonation, which the real API server
        // allows the admin; the emulated one has none).
        let shorter = "judged1-general-1";
        if real {
            let forged = dir.path().join("forged.json");
            let ip = plan.worker_pools()["general-1"].ips[0];
            std::fs::write(&forged, forged_csr(shorter, &worker, ip).to_string()).unwrap();
            let user = format!("system:node:{shorter}");
            let file = forged.to_str().unwrap();
            let args = [
                "create",
                "-f",
                file,
                "--as",
                &user,
                "--as-group",
                "system:nodes",
            ];
            succeeded(
                "create the forged CSR",
                run(&kubectl, dir.path(), &path, &args),
            );
        }
        // The worker's own request names only itself (as a kubelet's does);
        // it and the forged one stay pending while the approver has every
        // chance to act.
        let name = filed["metadata"]["name"].as_str().unwrap().to_string();
        for _ in 0..20 {
            let all = csrs();
            if real {
                let forged = of(&all, shorter).expect("the forged request stays");
                assert!(forged["status"].get("conditions").is_none(), "{forged:#}");
            }
            let now = of(&all, &worker).expect("the worker's request stays");
            assert!(now["status"].get("conditions").is_none(), "{now:#}");
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        // The way out the plan's warning gives: a person approves it, and
        // the controller-manager signs it.
        let approved = succeeded(
            "certificate approve",
            run(
                &kubectl,
                dir.path(),
                &path,
                &["certificate", "approve", &name],
            ),
        );
        assert!(approved.contains("approved"), "{approved}");
        eventually("the approved request signed", || {
            let now = of(&csrs(), &worker).unwrap();
            let signed = now["status"]["conditions"][0]["type"] == "Approved"
                && (!real || now["status"]["certificate"].is_string());
            signed.then_some(()).ok_or(now)
        });
    });
}

/// A kubelet-serving CSR as `node`'s kubelet would file it, asking for the
/// name `name` and the IP `ip`.
fn forged_csr(node: &str, name: &str, ip: std::net::Ipv4Addr) -> Value {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("system:node:{node}"));
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress(ip.into()));
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    serde_json::json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": format!("forged-by-{node}")},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(request),
            "signerName": SERVING,
            "usages": ["digital signature", "server auth"],
        },
    })
}

/// The kubelet-serving CSRs the API server lists.
fn serving_csrs(kubectl: &Path, dir: &Path, kubeconfig: &Path) -> Vec<Value> {
    let out = succeeded(
        "get csr",
        run(kubectl, dir, kubeconfig, &["get", "csr", "-o", "json"]),
    );
    let list: Value = serde_json::from_str(&out).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["spec"]["signerName"] == SERVING)
        .cloned()
        .collect()
}

/// The plan warns of the names the approver leaves to a person, by name,
/// at `kubelet_serving_cert_approval` (a pool of eleven: the tenth and
/// eleventh begin with the first's name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_names_the_nodes_whose_certificates_wait_for_a_person() {
    let sim = support::sim::start().await;
    let ws = workspace(&sim);
    ws.write("pools.auto.tfvars", &pools(11));
    tokio::task::block_in_place(|| {
        // hct_cluster reads its plan from the secrets' worker_join: known
        // once they exist (no server is made for that).
        ws.terraform(&["apply", "-auto-approve", "-target=hct_cluster_secrets.this"])
            .expect_success("the secrets");
        let out = ws.terraform(&["plan", "-no-color"]).expect_success("plan");
        let words = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("Warning: Serving certificates left for a person to approve")
                && words.contains("with hct_cluster.this")
                && words.contains("-general-10, ")
                && words.contains("-general-11. "),
            "{}",
            out.stdout
        );
        ws.write("pools.auto.tfvars", &pools(9));
        let out = ws.terraform(&["plan", "-no-color"]).expect_success("plan");
        assert!(!out.stdout.contains("left for a person"), "{}", out.stdout);
    });
}
