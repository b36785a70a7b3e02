//! The ways an apply or plan goes wrong: Hetzner's faults and a failing
//! action, a node or API server that never gets ready, and plans refused for
//! changes hct cannot make or a network without the default route.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_rate_limits_server_errors_and_locks() {
    let sim = sim().await;
    let ws = workspace(&sim);
    for fault in [
        r#"{"route": "POST /servers", "respond": 429, "count": 6}"#,
        r#"{"route": "GET /actions", "respond": 503, "count": 4}"#,
        r#"{"route": "POST /servers/{id}/actions/poweron", "respond": "locked", "count": 3}"#,
        r#"{"route": "GET /servers", "respond": 500, "count": 2}"#,
    ] {
        sim.add_fault(FaultSpec::parse(fault).unwrap());
    }
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply under faults");
        assert_converged(&sim, &ws, 3, "faults");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_action_fails_the_apply_and_a_rerun_converges() {
    let sim = sim().await;
    let ws = workspace(&sim);
    // A control plane's power-on fails: the pools, created beside it, stop
    // waiting for it at once (their create timeout is the default 30m).
    sim.add_fault(
        FaultSpec::parse(r#"{"action": "start_server", "server": "noreturn-cp-1", "count": 1}"#)
            .unwrap(),
    );
    tokio::task::block_in_place(|| {
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("failing action");
        assert!(out.stderr.contains("start_server"), "{out}");
        assert_eq!(sim.faults_json()["actions"], serde_json::json!([]), "{out}");
        // Each pool reached its wait for the control plane and stopped there,
        // saying why, instead of timing out.
        let words = unwrapped(&out.stderr);
        for pool in ["platform", "general"] {
            let stopped = format!(
                "noreturn-{pool}-1: stopped waiting for the control plane of cluster noreturn: \
                 its apply (hct_cluster) failed in this run"
            );
            assert!(words.contains(&stopped), "{pool}: {out}");
        }
        assert!(
            words.contains("The cluster's control plane failed in this apply"),
            "{out}"
        );
        assert!(!words.contains("Timed out"), "{out}");
        // What exists is in state.
        let state = ws
            .terraform(&["state", "list"])
            .expect_success("state list");
        assert!(state.stdout.contains("hct_cluster.this"), "{state}");
        // The failed create tainted the cluster: the rerun replaces it.
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("rerun");
        assert_converged(&sim, &ws, 3, "the rerun");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_never_comes_up_times_out_naming_it() {
    let sim = sim().await;
    let ws = workspace(&sim);
    sim.add_fault(
        FaultSpec::parse(r#"{"talos": "unreachable", "server": "noreturn-cp-2"}"#).unwrap(),
    );
    tokio::task::block_in_place(|| {
        let out = apply_timing_out_on(&ws, "noreturn-cp-2");
        // It never answered, in maintenance mode or after: the diagnostic
        // names the step and the two likely causes.
        let words = unwrapped(&out.stderr);
        assert!(words.contains("applying the machine config"), "{out}");
        assert!(
            words.contains("Talos cannot reach Hetzner's metadata service (169.254.169.254)"),
            "{out}"
        );
        assert!(words.contains("No egress"), "{out}");
        // It never got its config, and the state says so.
        let cp = &resource_values(&ws, "hct_cluster.this")["control_plane_nodes"];
        let cp_2 = cp
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == "noreturn-cp-2")
            .unwrap_or_else(|| panic!("noreturn-cp-2 is not in state: {cp}"));
        assert!(cp_2["config_sha256"].is_null(), "{cp_2}");
        // The servers are in state; once the node answers, untaint and continue
        // (the pools, which waited for that control plane, failed too).
        sim.clear_faults();
        for address in [
            "hct_cluster.this",
            "hct_worker_pool.this[\"platform\"]",
            "hct_worker_pool.this[\"general\"]",
        ] {
            ws.terraform(&["untaint", address])
                .expect_success("untaint");
        }
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("continue");
        assert_eq!(server_names(&sim), expected_names(3));

        // A plan that cannot reach a node cannot read its config back, and says so.
        sim.add_fault(
            FaultSpec::parse(r#"{"talos": "unreachable", "server": "noreturn-cp-2"}"#).unwrap(),
        );
        let out = ws
            .terraform(&["plan"])
            .expect_success("plan with a node unreachable");
        let words = unwrapped(&format!("{} {}", out.stdout, out.stderr));
        assert!(words.contains("Warning: Node configs not checked"), "{out}");
        assert!(
            words.contains("noreturn-cp-2 (10.0.128.18: cannot reach the Talos API"),
            "{out}"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_that_never_gets_ready_times_out_naming_it() {
    let sim = sim().await;
    let ws = workspace(&sim);
    sim.add_fault(
        FaultSpec::parse(r#"{"talos": "apiserver_down", "server": "noreturn-cp-3"}"#).unwrap(),
    );
    tokio::task::block_in_place(|| {
        let out = apply_timing_out_on(&ws, "noreturn-cp-3");
        assert!(
            out.stderr.contains("waiting for the Kubernetes API server"),
            "{out}"
        );
        // Terraform wraps long lines.
        let words = unwrapped(&out.stderr);
        assert!(words.contains("[-]etcd failed: injected"), "{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_hct_cannot_make_in_place_fail_the_plan() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let out = ws
            .terraform(&["plan", "-var", "talos_version=v1.12.5"])
            .expect_failure("talos_version downgrade");
        assert!(out.stderr.contains("talos_version cannot go back"), "{out}");
        let out = ws
            .terraform(&["plan", "-var", "location=fsn1"])
            .expect_failure("location change");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("control_plane.location cannot change in place"),
            "{out}"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_without_the_default_route_fails_the_plan() {
    let sim = sim().await;
    let network = support::sim::seeded_network(&sim);
    sim.modify(|w| w.networks.get_mut(&network).unwrap().routes.clear());
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        let out = ws.terraform(&["plan"]).expect_failure("no default route");
        assert!(
            out.stderr.contains("private-only nodes have no egress"),
            "{out}"
        );
        assert!(out.stderr.contains("network_id"), "{out}");
        assert!(server_names(&sim).is_empty());
    });
}
