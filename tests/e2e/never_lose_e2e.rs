//! No apply may lose or hand over a cluster (issue 27), through the real
//! CLI against hct-sim, judged from the sim's own call log and state (its
//! etcd per node, as unforgiving as Talos: a Bootstrap on a control plane
//! with empty data starts a second etcd there):
//!
//! - the first control plane, then the first two one after another,
//!   deleted behind the load balancer and recreated by apply: one etcd of
//!   three members, a ConfigMap written before is still read through the
//!   kubeconfig, and no Bootstrap was sent after the first apply;
//! - a configured node reinstalled behind hct's back (in maintenance mode,
//!   or configured by another cluster): the plan warns naming it, the apply
//!   fails naming it, and it was sent no ApplyConfiguration; deleting it is
//!   the way out;
//! - the state deleted: plan and apply refuse, naming the servers, and
//!   delete nothing; imported with its secrets, nothing is replaced or
//!   destroyed; an imported node reinstalled is refused (no config without
//!   the CA), the apply keeps every other server and the plan after is
//!   empty;
//! - every control plane powered off, then a change: the apply powers them
//!   on and etcd comes back, with no Bootstrap;
//! - a second workspace with the same cluster name: refused at plan;
//! - every control plane deleted: the apply makes them anew but stops
//!   (etcd is lost) and sends no Bootstrap; `-replace` starts over.
//!
//! The clusters run on hct-sim's real control plane: the ConfigMap is
//! written to and read back from a real etcd through a real kube-apiserver
//! (one etcd process per etcd cluster; its membership is the emulation's).

use crate::peers;
use crate::support;

use std::time::Duration;

use hct_sim::SimHandle;
use hct_sim::talos::call_log::{CallerKind, TalosCall};
use peers::kubectl::{kubeconfig_file, kubectl, run, succeeded};
use support::Workspace;
use support::reference::{import_reference, pools, state_attribute, workspace};
use support::sim::{assert_one_etcd_of_three, delete_server, requests_of, server_ids};
use support::unwrapped;

/// The reference example with one general worker; with the API behind the
/// load balancer when `balanced`.
async fn cluster(balanced: bool) -> (SimHandle, Workspace) {
    let sim = support::sim::start_with_real_kubernetes().await;
    let ws = workspace(&sim);
    ws.write("pools.auto.tfvars", &pools(1));
    if balanced {
        ws.write("endpoint.auto.tfvars", "api_endpoint = \"load_balancer\"\n");
    }
    (sim, ws)
}

fn plan(ws: &Workspace) -> (i32, support::TfOutput) {
    support::plan_exit_code(ws, &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreated_first_control_planes_join_the_one_etcd_and_nothing_is_bootstrapped_again() {
    let (sim, ws) = cluster(true).await;
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let bootstraps = support::sim::talos_calls_since(&sim, 0, &["Bootstrap"]);
        assert_eq!(bootstraps.len(), 1, "one Bootstrap: {bootstraps:#?}");
        assert_eq!(bootstraps[0].node, "noreturn-cp-1");
        assert_one_etcd_of_three(&sim, "the first apply");

        let dir = tempfile::tempdir().unwrap();
        let config = kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir.path());
        let kubectl = kubectl();
        let manifest = dir.path().join("before.yaml");
        std::fs::write(
            &manifest,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: before\n  namespace: default\ndata:\n  kept: \"yes\"\n",
        )
        .unwrap();
        succeeded(
            "write a ConfigMap",
            run(
                &kubectl,
                dir.path(),
                &config,
                &["apply", "--server-side", "-f", manifest.to_str().unwrap()],
            ),
        );
        let since = support::sim::talos_calls_count(&sim);

        for gone in [
            vec!["noreturn-cp-1"],
            vec!["noreturn-cp-1", "noreturn-cp-2"],
        ] {
            for name in &gone {
                let before = server_ids(&sim)[*name];
                delete_server(&sim, name);
                ws.terraform(&["apply", "-auto-approve"])
                    .expect_success(&format!("apply recreates {name}"));
                assert_ne!(server_ids(&sim)[*name], before, "{name} is a new server");
                support::sim::assert_real_etcd_votes_now(&sim, &format!("{name} was recreated"));
                assert_one_etcd_of_three(&sim, &format!("{name} was recreated"));
            }
            let read = succeeded(
                "read the ConfigMap",
                run(
                    &kubectl,
                    dir.path(),
                    &config,
                    &["get", "configmap", "before", "-o", "jsonpath={.data.kept}"],
                ),
            );
            assert_eq!(read.trim(), "yes", "written before {gone:?} were recreated");
            let (code, out) = plan(&ws);
            assert_eq!(code, 0, "{out}");
        }
        let again = support::sim::talos_calls_since(&sim, since, &["Bootstrap"]);
        assert!(
            again.is_empty(),
            "Bootstrap after the first apply: {again:#?}"
        );
    });
}

/// Reinstalls `name` behind hct's back and waits until its Talos runs
/// again.
fn reinstall(sim: &SimHandle, name: &str, with: &str) {
    sim.add_fault(
        hct_sim::FaultSpec::parse(&format!(
            r#"{{"talos": "reinstalled", "server": "{name}", "with": "{with}"}}"#
        ))
        .unwrap(),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let state = sim.state_json();
        let node = state["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap();
        if node["talos"]["phase"] == "running" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} never came back: {node:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reinstalled_node_is_never_sent_a_config() {
    let (sim, ws) = cluster(false).await;
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        for (name, with, answer) in [
            (
                "noreturn-general-1",
                "maintenance",
                "answers in maintenance mode",
            ),
            (
                "noreturn-cp-3",
                "foreign_ca",
                "answers with another cluster's CA",
            ),
        ] {
            let since = support::sim::talos_calls_count(&sim);
            reinstall(&sim, name, with);
            // The plan shows it (a warning, and what its refresh found as
            // its config_sha256); the apply refuses it, naming it.
            let (code, out) = plan(&ws);
            assert_eq!(code, 2, "the plan shows {name}\n{out}");
            let said = |out: &support::TfOutput| {
                let words = unwrapped(&format!("{} {}", out.stdout, out.stderr));
                words.contains(&format!("{name} does not answer with this cluster's CA"))
                    && words.contains(answer)
                    && words.contains(&format!("hcloud server delete {name}"))
            };
            assert!(said(&out), "{out}");
            assert!(
                out.stdout.contains(&format!("untrusted: {answer}")),
                "{out}"
            );
            let out = ws
                .terraform(&["apply", "-auto-approve"])
                .expect_failure(&format!("apply with {name} reinstalled"));
            assert!(said(&out), "{out}");
            let sent: Vec<TalosCall> =
                support::sim::talos_calls_since(&sim, since, &["ApplyConfiguration"])
                    .into_iter()
                    .filter(|c| c.node == name)
                    .collect();
            assert!(sent.is_empty(), "{name} was sent a config: {sent:#?}");
            // Nor an etcd snapshot asked of it, nor one sent anywhere.
            let etcd: Vec<TalosCall> = support::sim::talos_calls_since(
                &sim,
                since,
                &["EtcdSnapshot", "EtcdRecover", "Bootstrap"],
            )
            .into_iter()
            .filter(|c| c.node == name || c.call != "EtcdSnapshot")
            .collect();
            assert!(
                etcd.is_empty(),
                "etcd calls with {name} untrusted: {etcd:#?}"
            );

            // The way out: delete it, and apply makes it anew.
            delete_server(&sim, name);
            ws.terraform(&["apply", "-auto-approve"])
                .expect_success(&format!("apply after deleting {name}"));
            let (code, out) = plan(&ws);
            assert_eq!(code, 0, "{out}");
        }
        assert_one_etcd_of_three(&sim, "the replacements");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_state_is_refused_at_plan_then_imported_without_replacing_anything() {
    let (sim, ws) = cluster(false).await;
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let servers = server_ids(&sim);
        let secrets = state_attribute(&ws, "hct_cluster_secrets.this", "machine_secrets");
        let image = state_attribute(&ws, "hct_talos_image.this", "id");
        std::fs::remove_file(ws.path().join("terraform.tfstate")).unwrap();

        let (code, out) = plan(&ws);
        assert_eq!(code, 1, "{out}");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("Servers of this cluster that state does not know")
                && (1..=3).all(|n| words.contains(&format!("noreturn-cp-{n}")))
                && words.contains("terraform import hct_cluster.<name> noreturn"),
            "{out}"
        );
        let deletes = requests_of(&sim, "DELETE /servers/{id}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_failure("apply without state");
        assert_eq!(server_ids(&sim), servers, "nothing deleted or created");
        assert_eq!(
            requests_of(&sim, "DELETE /servers/{id}"),
            deletes,
            "no delete sent"
        );

        // Import: the secrets as the variable, then each resource.
        ws.write(
            "secrets.auto.tfvars",
            &format!("machine_secrets = <<EOT\n{secrets}EOT\n"),
        );
        import_reference(&ws, &image);
        // An imported node is one configured before: reinstalled, it is
        // never sent its config without the cluster's CA.
        let since = support::sim::talos_calls_count(&sim);
        reinstall(&sim, "noreturn-general-1", "maintenance");
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("apply with an imported node reinstalled");
        assert!(
            out.stderr
                .contains("noreturn-general-1 does not answer with this cluster's CA"),
            "{out}"
        );
        let anonymous: Vec<TalosCall> =
            support::sim::talos_calls_since(&sim, since, &["ApplyConfiguration"])
                .into_iter()
                .filter(|c| c.caller == CallerKind::Anonymous)
                .collect();
        assert!(anonymous.is_empty(), "{anonymous:#?}");
        delete_server(&sim, "noreturn-general-1");
        assert_eq!(
            requests_of(&sim, "DELETE /servers/{id}"),
            deletes + 1,
            "the request log counts the one delete, by hand"
        );
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after the import");
        let mut servers = servers;
        servers.insert(
            "noreturn-general-1".into(),
            server_ids(&sim)["noreturn-general-1"],
        );
        assert_eq!(
            server_ids(&sim),
            servers,
            "the same servers but the one deleted"
        );
        let (code, out) = plan(&ws);
        assert_eq!(code, 0, "{out}");
        assert_one_etcd_of_three(&sim, "the import");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_workspace_with_the_same_cluster_name_is_refused_at_plan() {
    let (sim, ws) = cluster(false).await;
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let servers = server_ids(&sim);
        let deletes = requests_of(&sim, "DELETE /servers/{id}");
        let other = workspace(&sim);
        other.write("pools.auto.tfvars", &pools(1));
        let (code, out) = plan(&other);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.stderr
                .contains("Servers of this cluster that state does not know")
                && out.stderr.contains("noreturn-cp-1"),
            "{out}"
        );
        other
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("the second workspace's apply");
        assert_eq!(server_ids(&sim), servers, "nothing deleted or created");
        assert_eq!(
            requests_of(&sim, "DELETE /servers/{id}"),
            deletes,
            "no delete sent"
        );
        let (code, out) = plan(&ws);
        assert_eq!(code, 0, "the first workspace is untouched\n{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_control_plane_gone_stops_the_apply_instead_of_an_empty_etcd() {
    let (sim, ws) = cluster(false).await;
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        for n in 1..=3 {
            delete_server(&sim, &format!("noreturn-cp-{n}"));
        }
        let since = support::sim::talos_calls_count(&sim);
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("apply with every control plane gone");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("The cluster's etcd is lost")
                && words.contains("--recover-from")
                && words.contains("-replace=hct_cluster"),
            "{out}"
        );
        // The new control planes wait, in state, for a restore.
        let servers = server_ids(&sim);
        assert!(
            (1..=3).all(|n| servers.contains_key(&format!("noreturn-cp-{n}"))),
            "{servers:?}"
        );
        assert!(support::sim::talos_calls_since(&sim, since, &["Bootstrap"]).is_empty());
        assert!(
            support::sim::etcd_rings(&sim).is_empty(),
            "no etcd: {:?}",
            support::sim::etcd_rings(&sim)
        );
        let (code, out) = plan(&ws);
        assert_eq!(
            code, 2,
            "the next plan still shows the cluster unfinished\n{out}"
        );

        // Starting over is a deliberate replacement.
        ws.terraform(&["apply", "-auto-approve", "-replace=hct_cluster.this"])
            .expect_success("apply -replace");
        let bootstraps = support::sim::talos_calls_since(&sim, since, &["Bootstrap"]);
        assert_eq!(bootstraps.len(), 1, "{bootstraps:#?}");
        assert_one_etcd_of_three(&sim, "starting over");
        let (code, out) = plan(&ws);
        assert_eq!(code, 0, "{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_planes_powered_off_come_back_with_their_etcd_and_no_bootstrap() {
    let (sim, ws) = cluster(false).await;
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let servers = server_ids(&sim);
        for n in 1..=3 {
            support::sim::power_off_server(&sim, &format!("noreturn-cp-{n}"));
        }
        // A change for the control planes, so the apply has work on them
        // (hct does not take a powered-off server for drift).
        ws.write(
            "cni.auto.tfvars.json",
            &serde_json::json!({ "cni_manifest": support::reference::CNI_MANIFEST }).to_string(),
        );
        let since = support::sim::talos_calls_count(&sim);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply with every control plane off");
        assert_eq!(server_ids(&sim), servers, "the same servers");
        assert!(support::sim::talos_calls_since(&sim, since, &["Bootstrap"]).is_empty());
        assert_one_etcd_of_three(&sim, "powering on");
    });
}
