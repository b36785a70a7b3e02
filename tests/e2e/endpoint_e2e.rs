//! `api_endpoint = "load_balancer"` end to end on hct-sim, with the real
//! Terraform (or OpenTofu) and the real kubectl: the example cluster
//! applied with a private load balancer in front of its control planes.
//!
//! - the load balancer is on the network at the plan's IP (10.0.128.254),
//!   public interface off, its target the cluster's control planes at
//!   their private IPs, services 6443, 50000 and 50001, and it is the endpoint of
//!   the kubeconfig, of every node's config and of the plan;
//! - a second plan is empty;
//! - with the first control plane powered off, `kubectl get --raw /readyz`
//!   through the kubeconfig (over the sim's SOCKS5 proxy) answers again
//!   once its real etcd member has stopped and the others lead (etcd's own
//!   election), and keeps answering: the load balancer leads to the
//!   healthy control planes only;
//! - its server deleted, etcd still lists it, the plan warns that apply
//!   makes it again, apply does at its IP, and etcd lists exactly three
//!   members, all running; a second plan is empty;
//! - scaling the control plane 3 -> 5 -> 3 keeps etcd's quorum at every
//!   change of its membership (the sim's own events);
//! - destroy leaves no load balancer;
//! - a test cluster's one control plane grows to three (the API answering
//!   through the load balancer after each apply) and shrinks back to one,
//!   keeping etcd's quorum on the way down; each plan after is empty;
//! - a load balancer changed outside hct (a service gone, public interface
//!   on) and then deleted shows in the plan as an update of
//!   `api_load_balancer_id`, which apply puts right (the same load balancer,
//!   then a new one); each plan after is empty; moved to another IP, it
//!   shows too and apply stops, naming the setting to change;
//! - a create that fails after making the load balancer (no server can be
//!   created) keeps `hct_cluster` in state, and destroy deletes it;
//! - switching an existing cluster from `first_control_plane` to
//!   `load_balancer` and back moves every node's endpoint, the kubeconfig
//!   works after each, the load balancer exists only in its mode (it goes
//!   once no node uses it), and each plan after is empty.

use crate::peers;
use crate::support;

use std::path::{Path, PathBuf};

use peers::kubectl::{kubectl, run, succeeded};
use serde_json::Value;
use support::Workspace;
use support::reference::{pools, resource_values, workspace};

const LB_IP: &str = "10.0.128.254";

/// `terraform plan -detailed-exitcode`: 0 = no changes, 2 = changes.
fn plan_exit_code(ws: &Workspace) -> i32 {
    let out = ws.terraform(&["plan", "-detailed-exitcode"]);
    let code = out.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 2, "plan failed: {}", out.stderr);
    if code == 2 {
        eprintln!("{}", out.stdout);
    }
    code
}

/// The example on a fresh sim with one general worker and
/// `api_endpoint = "load_balancer"`.
async fn balanced() -> (hct_sim::SimHandle, Workspace) {
    let sim = support::sim::start_with_real_kubernetes().await;
    let ws = workspace(&sim);
    ws.write("pools.auto.tfvars", &pools(1));
    ws.write("endpoint.auto.tfvars", "api_endpoint = \"load_balancer\"\n");
    (sim, ws)
}

fn load_balancers(sim: &hct_sim::SimHandle) -> Vec<Value> {
    sim.state_json()["load_balancers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The endpoint every node's config names, once each (sorted).
fn node_endpoints(sim: &hct_sim::SimHandle) -> Vec<String> {
    let mut found: Vec<String> = sim.inspect(|w| {
        w.servers
            .values()
            .filter_map(|s| s.talos.as_ref())
            .filter_map(|t| t.node.config().map(|c| c.endpoint.clone()))
            .collect()
    });
    found.sort();
    found.dedup();
    found
}

/// The workspace's kubeconfig output, through the sim's proxy, in `dir`.
fn kubeconfig_file(sim: &hct_sim::SimHandle, ws: &Workspace, dir: &Path) -> PathBuf {
    peers::kubectl::kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir)
}

/// After an apply: the next plan is empty, and the API answers through a
/// kubeconfig made from the outputs.
fn assert_settled(sim: &hct_sim::SimHandle, ws: &Workspace, after: &str) {
    assert_eq!(plan_exit_code(ws), 0, "a plan after {after} is empty");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig_file(sim, ws, dir.path());
    readyz(&kubeconfig, &format!("readyz after {after}"));
}

/// `kubectl get --raw /readyz` with `kubeconfig`.
fn readyz(kubeconfig: &Path, what: &str) {
    let dir = kubeconfig.parent().unwrap();
    let out = succeeded(
        what,
        run(&kubectl(), dir, kubeconfig, &["get", "--raw", "/readyz"]),
    );
    assert_eq!(out.trim(), "ok", "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_the_endpoint_moves_every_node_and_retires_the_load_balancer() {
    let sim = support::sim::start_with_real_kubernetes().await;
    let ws = workspace(&sim);
    ws.write("pools.auto.tfvars", &pools(1));
    let first = "https://10.0.128.17:6443".to_string();
    let balanced = format!("https://{LB_IP}:6443");
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply with the first control plane");
        assert_eq!(node_endpoints(&sim), vec![first.clone()]);
        assert!(load_balancers(&sim).is_empty());

        for (mode, endpoint) in [
            ("load_balancer", &balanced),
            ("first_control_plane", &first),
        ] {
            ws.write(
                "endpoint.auto.tfvars",
                &format!("api_endpoint = \"{mode}\"\n"),
            );
            ws.terraform(&["apply", "-auto-approve"])
                .expect_success(&format!("apply switching to {mode}"));
            assert_eq!(
                node_endpoints(&sim),
                vec![endpoint.to_string()],
                "every node moved to {mode}"
            );
            assert_eq!(
                load_balancers(&sim).len(),
                usize::from(mode == "load_balancer"),
                "{:#?}",
                load_balancers(&sim)
            );
            assert_eq!(ws.outputs()["endpoint"]["value"], endpoint.as_str());
            assert_settled(&sim, &ws, &format!("switching to {mode}"));
        }
    });
}

/// The cluster's etcd members as the sim's state shows them: (hostname,
/// running), by hostname.
fn etcd_members(sim: &hct_sim::SimHandle) -> Vec<(String, bool)> {
    let state = sim.state_json();
    let clusters = state["etcd"].as_object().cloned().unwrap_or_default();
    assert_eq!(clusters.len(), 1, "one cluster: {clusters:#?}");
    let mut members: Vec<(String, bool)> = clusters
        .values()
        .next()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["hostname"].as_str().unwrap().to_string(),
                m["up"].as_bool().unwrap(),
            )
        })
        .collect();
    members.sort_unstable();
    members
}

/// noreturn-cp-1, -2, … with whether each runs.
fn members(up: &[bool]) -> Vec<(String, bool)> {
    up.iter()
        .enumerate()
        .map(|(i, up)| (format!("noreturn-cp-{}", i + 1), *up))
        .collect()
}

/// Every change of the cluster's etcd membership since the last call kept
/// a quorum: more than half the listed members running.
fn assert_quorum_kept(
    events: &mut tokio::sync::broadcast::Receiver<hct_sim::SimEvent>,
    during: &str,
) {
    let mut seen = 0;
    loop {
        match events.try_recv() {
            Ok(hct_sim::SimEvent::EtcdMembers { members, .. }) => {
                seen += 1;
                let up = members.iter().filter(|(_, up)| *up).count();
                assert!(
                    up * 2 > members.len(),
                    "etcd lost its quorum during {during}: {members:?}"
                );
            }
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => break,
            Err(e) => panic!("the sim's events during {during}: {e}"),
        }
    }
    assert!(seen > 0, "etcd's membership never changed during {during}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancer_endpoint_survives_the_first_control_plane() {
    let (sim, ws) = balanced().await;
    let client = support::sim::client(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let outputs = ws.outputs();
        let endpoint = outputs["endpoint"]["value"].as_str().unwrap().to_string();
        assert_eq!(endpoint, format!("https://{LB_IP}:6443"));

        let found = load_balancers(&sim);
        assert_eq!(found.len(), 1, "{found:#?}");
        let lb = &found[0];
        assert_eq!(lb["name"], "noreturn-api");
        assert_eq!(lb["labels"]["managed-by"], "hct");
        assert_eq!(lb["labels"]["cluster"], "noreturn");
        assert_eq!(lb["load_balancer_type"]["name"], "lb11");
        assert_eq!(lb["public_net"]["enabled"], false, "{lb:#}");
        assert_eq!(lb["private_net"][0]["ip"], LB_IP);
        let mut ports: Vec<i64> = lb["services"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["listen_port"].as_i64().unwrap())
            .collect();
        ports.sort_unstable();
        assert_eq!(ports, vec![6443, 50000, 50001]);
        for service in lb["services"].as_array().unwrap() {
            assert_eq!(service["protocol"], "tcp");
            assert_eq!(service["health_check"]["protocol"], "tcp");
            assert_eq!(service["destination_port"], service["listen_port"]);
        }
        let targets = lb["targets"].as_array().unwrap();
        assert_eq!(targets.len(), 1, "{targets:#?}");
        assert_eq!(targets[0]["type"], "label_selector");
        assert_eq!(
            targets[0]["label_selector"]["selector"],
            "managed-by=hct,cluster=noreturn,pool=cp"
        );
        assert_eq!(targets[0]["use_private_ip"], true);
        assert_eq!(
            targets[0]["targets"].as_array().unwrap().len(),
            3,
            "the three control planes, not the workers: {targets:#?}"
        );

        // Every node's config points at the load balancer.
        let endpoints: Vec<String> = sim.inspect(|w| {
            w.servers
                .values()
                .filter_map(|s| s.talos.as_ref())
                .filter_map(|t| t.node.config().map(|c| c.endpoint.clone()))
                .collect()
        });
        assert_eq!(
            endpoints.len(),
            7,
            "3 control planes, 3 platform and 1 general worker"
        );
        assert!(endpoints.iter().all(|e| *e == endpoint), "{endpoints:?}");

        assert_eq!(plan_exit_code(&ws), 0, "a second plan is empty");

        let dir = tempfile::tempdir().unwrap();
        let path = kubeconfig_file(&sim, &ws, dir.path());
        let readyz = |what: &str| readyz(&path, what);
        for n in 0..3 {
            readyz(&format!("readyz #{n} through the load balancer"));
        }

        // The first control plane goes down; the load balancer leads to
        // the other two.
        let first = outputs["control_plane_nodes"]["value"][0]["server_id"]
            .as_i64()
            .or_else(|| {
                outputs["control_plane_nodes"]["value"][0]["server_id"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
            })
            .expect("the first control plane's server id");
        let runtime = tokio::runtime::Handle::current();
        runtime.block_on(async {
            let action = client.power_off(first).await.unwrap();
            client
                .wait_for_actions(
                    vec![action],
                    "power off",
                    std::time::Duration::from_secs(30),
                )
                .await
                .unwrap();
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while sim.inspect(|w| w.servers[&first].status.as_str() != "off") {
            assert!(std::time::Instant::now() < deadline, "server never stopped");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let health = load_balancers(&sim)[0]["targets"][0]["targets"].clone();
        let down: Vec<&Value> = health
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["server"]["id"] == first)
            .collect();
        assert_eq!(down.len(), 1, "{health:#}");
        let statuses = down[0]["health_status"].as_array().unwrap();
        assert!(!statuses.is_empty(), "{health:#}");
        assert!(
            statuses.iter().all(|h| h["status"] == "unhealthy"),
            "{health:#}"
        );
        // Its etcd member stops with it; if it led, the other two elect a
        // leader, and kube-apiserver's etcd check fails meanwhile, as on
        // real nodes. The endpoint must be back within that (a few of
        // etcd's 2.5 s election timeouts, on a loaded machine), then stay.
        support::sim::await_real_etcd_stopped(&sim, "noreturn-cp-1");
        let election = std::time::Duration::from_secs(30);
        support::eventually_within("readyz with the first control plane off", election, || {
            let out = run(&kubectl(), dir.path(), &path, &["get", "--raw", "/readyz"]);
            match out.status.success() {
                true => Ok(()),
                false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
            }
        });
        for n in 0..6 {
            readyz(&format!(
                "readyz #{n} through the load balancer, first control plane off"
            ));
        }

        // Then its server is deleted: etcd still lists it, the plan says
        // apply makes it again, and apply does, at its IP; as it joins,
        // the old member goes (Talos removes a member of its hostname).
        let mut events = sim.events();
        support::sim::delete_server(&sim, "noreturn-cp-1");
        assert_eq!(
            etcd_members(&sim),
            members(&[false, true, true]),
            "a deleted server's member stays listed"
        );
        readyz("readyz through the load balancer, first control plane deleted");
        let plan = ws.terraform(&["plan", "-no-color"]).expect_success("plan");
        let words = plan.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("Control planes gone: noreturn-cp-1 (10.0.128.17)")
                && words.contains("2 of 3 run, 2 are needed"),
            "{plan}"
        );
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply recreates the first control plane");
        assert_eq!(
            etcd_members(&sim),
            members(&[true, true, true]),
            "exactly three members, all running"
        );
        assert_eq!(
            plan_exit_code(&ws),
            0,
            "a plan after the replacement is empty"
        );
        readyz("readyz through the load balancer, first control plane back");
        assert_quorum_kept(&mut events, "the replacement");

        // Scaling the control plane 3 -> 5 -> 3 keeps etcd's quorum at
        // every step the sim's etcd went through.
        for count in [5, 3] {
            ws.write(
                "control_plane.auto.tfvars",
                &format!("control_plane_nodes = {count}\n"),
            );
            ws.terraform(&["apply", "-auto-approve"])
                .expect_success(&format!("apply with {count} control planes"));
            let members = etcd_members(&sim);
            assert_eq!(members.len(), count, "{members:?}");
            assert!(members.iter().all(|(_, up)| *up), "{members:?}");
            assert_eq!(
                plan_exit_code(&ws),
                0,
                "a plan after scaling to {count} is empty"
            );
            assert_quorum_kept(&mut events, &format!("scaling to {count}"));
            readyz(&format!("readyz with {count} control planes"));
        }

        ws.terraform(&["destroy", "-auto-approve"])
            .expect_success("destroy");
        assert!(
            load_balancers(&sim).is_empty(),
            "{:#?}",
            load_balancers(&sim)
        );
    });
}

/// `api_load_balancer_id` in state.
fn load_balancer_id_in_state(ws: &Workspace) -> Value {
    resource_values(ws, "hct_cluster.this")["api_load_balancer_id"].clone()
}

/// The plan after a change outside hct: an update of the load balancer's id.
fn assert_plan_puts_back(ws: &Workspace, what: &str) {
    let out = ws.terraform(&["plan", "-no-color", "-detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(2), "{what}: {}", out.stderr);
    let words = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("hct_cluster.this will be updated in-place")
            && words.contains("+ api_load_balancer_id = (known after apply)")
            && !words.contains("config_sha256")
            && words.contains("Plan: 0 to add, 1 to change, 0 to destroy."),
        "{what}: {}",
        out.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancer_changed_outside_hct_shows_in_the_plan_and_is_put_back() {
    let (sim, ws) = balanced().await;
    let client = support::sim::client(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let first = load_balancers(&sim)[0]["id"].as_i64().unwrap();
        assert_eq!(load_balancer_id_in_state(&ws), first);
        assert_eq!(plan_exit_code(&ws), 0);

        // Changed: the Talos API's service removed, the public interface on.
        sim.modify(|w| {
            let lb = w.load_balancers.values_mut().next().unwrap();
            lb.services.retain(|s| s.listen_port != 50000);
            lb.public_enabled = true;
        });
        assert_plan_puts_back(&ws, "a service gone, public interface on");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply puts the load balancer right");
        let found = load_balancers(&sim);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0]["id"], first, "the same load balancer");
        assert_eq!(found[0]["public_net"]["enabled"], false);
        assert_eq!(found[0]["services"].as_array().unwrap().len(), 3);
        assert_eq!(load_balancer_id_in_state(&ws), first);
        assert_eq!(plan_exit_code(&ws), 0, "a plan after is empty");

        // Deleted: apply makes a new one, at the same IP.
        tokio::runtime::Handle::current()
            .block_on(client.delete_load_balancer(first))
            .unwrap();
        assert_plan_puts_back(&ws, "the load balancer deleted");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply makes the load balancer again");
        let found = load_balancers(&sim);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_ne!(found[0]["id"], first, "a new load balancer");
        assert_eq!(found[0]["private_net"][0]["ip"], LB_IP);
        assert_eq!(load_balancer_id_in_state(&ws), found[0]["id"]);
        assert_settled(&sim, &ws, "a new load balancer");

        // Moved to another IP: shown too, but apply stops and says what to do.
        sim.modify(|w| {
            let lb = w.load_balancers.values_mut().next().unwrap();
            lb.private_net[0].ip = "10.0.128.250".parse().unwrap();
        });
        assert_plan_puts_back(&ws, "the load balancer at another IP");
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("a load balancer at another IP");
        let words = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("Load balancer at another IP")
                && words.contains("Set load_balancer_ip = \"10.0.128.250\""),
            "{out}"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_that_fails_after_the_load_balancer_keeps_it_for_destroy() {
    let (sim, ws) = balanced().await;
    // No server can be created; the load balancer, made first, can.
    sim.add_fault(
        hct_sim::FaultSpec::parse(
            r#"{"route": "POST /servers", "respond": {"status": 403, "code": "resource_limit_exceeded"}}"#,
        )
        .unwrap(),
    );
    tokio::task::block_in_place(|| {
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("no server can be created");
        assert!(out.stderr.contains("resource_limit_exceeded"), "{out}");
        assert_eq!(load_balancers(&sim).len(), 1);
        let servers = sim.inspect(|w| {
            w.servers
                .values()
                .filter(|s| s.name.starts_with("noreturn-"))
                .count()
        });
        assert_eq!(servers, 0);
        let state = ws
            .terraform(&["state", "list"])
            .expect_success("state list");
        assert!(
            state.stdout.contains("hct_cluster.this"),
            "the load balancer is in state: {state}"
        );
        // A refresh keeps it (no server exists, the load balancer does), and
        // destroy deletes it.
        ws.terraform(&["destroy", "-auto-approve"])
            .expect_success("destroy");
        assert!(
            load_balancers(&sim).is_empty(),
            "{:#?}",
            load_balancers(&sim)
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_control_plane_grows_to_three_and_back_to_one() {
    let (sim, ws) = balanced().await;
    let apply_with = |count: usize| {
        ws.write(
            "control_plane.auto.tfvars",
            &format!("control_plane_nodes = {count}\n"),
        );
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success(&format!("apply with {count} control planes"));
        let running = vec![true; count];
        assert_eq!(etcd_members(&sim), members(&running));
        if count > 1 {
            // Joins: hct waited for each new member to vote. (A member
            // removed is gone from the real etcd at the sim's next pass.)
            support::sim::assert_real_etcd_votes_now(&sim, &format!("going to {count}"));
        }
        support::sim::assert_real_etcd_follows(&sim, &format!("going to {count}"));
        assert_settled(&sim, &ws, &format!("going to {count} control planes"));
    };
    tokio::task::block_in_place(|| {
        apply_with(1);
        apply_with(3);
        // Growing from one member cannot keep a quorum of the old size; on
        // the way down each member leaves while the others run.
        let mut events = sim.events();
        let since = support::sim::talos_calls_count(&sim);
        apply_with(1);
        assert_quorum_kept(&mut events, "shrinking from three to one");
        // The etcd snapshot comes before the first control plane leaves.
        let calls: Vec<String> =
            support::sim::talos_calls_since(&sim, since, &["EtcdSnapshot", "Reset"])
                .into_iter()
                .map(|c| c.call)
                .collect();
        assert_eq!(
            calls.first().map(String::as_str),
            Some("EtcdSnapshot"),
            "{calls:?}"
        );
        assert_eq!(
            calls.iter().filter(|c| *c == "EtcdSnapshot").count(),
            1,
            "{calls:?}"
        );
        assert!(calls.contains(&"Reset".to_string()), "{calls:?}");
    });
}
