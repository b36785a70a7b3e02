//! `hct_cluster` and `hct_worker_pool` through a real Terraform against
//! hct-sim, on the shipped example `examples/private-cluster` (the reference
//! layout): apply, no-change plan, scale a pool 3 → 5 → 2, drift (servers,
//! labels, configs changed with talosctl), import,
//! destroy; Talos upgrades (v1.11 → v1.12 → v1.13) and a cluster on v1.13;
//! the configs each node runs, judged by Talos' own machinery at the node's
//! release; and the ways it goes wrong: API faults, a failing action, a node
//! that never comes up, a network without the default route, and the
//! provider killed mid-apply.

mod peers;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use hct::secret::Secret;
use hct::talos::Secrets;
use hct::talos::api::{AdminCredentials, ApplyMode, NodeAddress, TalosClient, Trust};
use hct::talos::client_config::{
    admin_kubeconfig_at, client_certificate_expiry, talos_api_credentials, talosconfig_at,
};
use hct_sim::resources::servers::{Server, ServerStatus};
use hct_sim::state::World;
use hct_sim::{FaultSpec, SimHandle};
use peers::talos_check::{Config, assert_clean, check};
use serde_json::json;
use support::Workspace;
use support::reference::{pools, pools_labelled, resource_values, state_attribute, workspace};
use support::timeline::{out_of_service_at_once, talos_starts, talos_timeline};
use support::{apply_with_provider_log, plan_exit_code, unwrapped};

/// The `nodes` of a pool in state: name → (server id, config hash).
fn pool_nodes(ws: &Workspace, pool: &str) -> Vec<(String, i64, String)> {
    ws.outputs()["worker_nodes"]["value"][pool]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_string(),
                n["server_id"].as_i64().unwrap(),
                n["config_sha256"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The sim's servers but the seed's NAT gateway.
fn cluster_servers(w: &World) -> impl Iterator<Item = &Server> {
    w.servers
        .values()
        .filter(|s| !hct_sim::seed::is_seeded(&s.labels))
}

fn server_names(sim: &SimHandle) -> BTreeSet<String> {
    sim.inspect(|w| cluster_servers(w).map(|s| s.name.clone()).collect())
}

fn expected_names(general: u32) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for n in 1..=3 {
        names.insert(format!("noreturn-cp-{n}"));
        names.insert(format!("noreturn-platform-{n}"));
    }
    for n in 1..=general {
        names.insert(format!("noreturn-general-{n}"));
    }
    names
}

fn placement_groups(sim: &SimHandle) -> usize {
    sim.inspect(|w| w.placement_groups.len())
}

fn server_id(sim: &SimHandle, name: &str) -> i64 {
    sim.inspect(|w| cluster_servers(w).find(|s| s.name == name).map(|s| s.id))
        .unwrap_or_else(|| panic!("no server {name}"))
}

/// Starts `terraform apply` and returns once `count` servers exist.
fn apply_until_servers_exist(ws: &Workspace, sim: &SimHandle, count: usize) -> std::process::Child {
    let apply = ws
        .command(&["apply", "-auto-approve", "-no-color"])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server_names(sim).len() < count {
        assert!(
            std::time::Instant::now() < deadline,
            "servers never appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    apply
}

/// The provider log's lines about nodes going down (`down`) and coming
/// back (`up`), in order, as "down <node>" / "up <node>".
fn node_steps(log: &str, down: &str, up: &str) -> Vec<String> {
    log.lines()
        .filter_map(|line| {
            let node = line.split("node=").nth(1)?.split_whitespace().next()?;
            let step = if line.contains(down) {
                "down"
            } else if line.contains(up) {
                "up"
            } else {
                return None;
            };
            Some(format!("{step} {}", node.trim_matches('"')))
        })
        .collect()
}

/// Within each group, every node is back up before the next goes down.
fn assert_one_at_a_time(steps: &[String], groups: &[&str]) {
    for group in groups {
        let of_group: Vec<&String> = steps.iter().filter(|s| s.contains(group)).collect();
        for pair in of_group.chunks(2) {
            let node = pair[0].strip_prefix("down ").expect("goes down first");
            assert_eq!(*pair[1], format!("up {node}"), "{steps:#?}");
        }
    }
}

/// Talos' own validation (cloud mode, strict; by the machinery checker of
/// the Talos minor each node runs, e.g. v1.12.6 for v1.12.x) of the config
/// every configured node of the sim runs: what hct applied, as the node
/// keeps it. Returns how many were judged.
fn assert_talos_accepts_applied_configs(sim: &SimHandle) -> usize {
    let applied: Vec<(String, String, String)> = sim.inspect(|w| {
        cluster_servers(w)
            .filter_map(|server| {
                let talos = server.talos.as_ref()?;
                let config = talos.node.config()?;
                Some((
                    server.name.clone(),
                    talos.version.clone(),
                    config.text.expose().to_owned(),
                ))
            })
            .collect()
    });
    assert!(!applied.is_empty(), "no node of the sim runs a config");
    let peers = peers::peers();
    let mut by_release: BTreeMap<String, Vec<Config>> = BTreeMap::new();
    for (name, version, text) in &applied {
        let minor = version
            .rsplit_once('.')
            .map_or(version.as_str(), |(m, _)| m);
        let release = peers.talos_release_of_minor(minor).to_owned();
        by_release.entry(release).or_default().push(Config {
            label: format!("{name}-on-{version}"),
            text: text.clone(),
        });
    }
    for (release, configs) in &by_release {
        assert_clean(release, &check(release, configs));
    }
    applied.len()
}

async fn sim() -> SimHandle {
    support::sim::start().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builds_scales_drifts_imports_and_destroys_the_reference_cluster() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("first apply");
        assert_eq!(server_names(&sim), expected_names(3));
        sim.inspect(|w| {
            for server in cluster_servers(w) {
                assert!(
                    server.public_ipv4.is_none() && server.public_ipv6.is_none(),
                    "{} has a public IP",
                    server.name
                );
                assert!(
                    server.placement_group.is_some(),
                    "{} is in no placement group",
                    server.name
                );
                // The default delivery: configs applied in maintenance mode.
                assert!(server.user_data.is_none(), "{} has user data", server.name);
            }
        });
        // cp, platform and general: one spread group each.
        assert_eq!(placement_groups(&sim), 3);
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let outputs = ws.outputs();
        assert_eq!(
            outputs["endpoint"]["value"],
            json!("https://10.0.128.17:6443")
        );
        let cp = &outputs["control_plane_nodes"]["value"];
        assert_eq!(cp[1]["name"], json!("noreturn-cp-2"));
        assert_eq!(cp[1]["ip"], json!("10.0.128.18"));
        let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap();
        assert!(
            kubeconfig.contains("https://10.0.128.17:6443"),
            "{kubeconfig}"
        );
        let talosconfig = outputs["talosconfig"]["value"].as_str().unwrap();
        assert!(talosconfig.contains("10.0.128.19"), "{talosconfig}");

        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "a second plan must be empty\n{out}");

        // Scale general 3 → 5: the next IPs.
        ws.write("pools.auto.tfvars", &pools(5));
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("scale up");
        assert_eq!(server_names(&sim), expected_names(5));
        let general = &ws.outputs()["worker_nodes"]["value"]["general"];
        assert_eq!(general[4]["ip"], json!("10.0.128.69"));

        // 5 → 2: highest indexes go.
        ws.write("pools.auto.tfvars", &pools(2));
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("scale down");
        assert_eq!(server_names(&sim), expected_names(2));
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after scaling down\n{out}");

        // Drift: a server deleted and labels changed behind Terraform's back.
        let gone = server_id(&sim, "noreturn-general-2");
        sim.modify(|w| w.servers.remove(&gone));
        let cp2 = server_id(&sim, "noreturn-cp-2");
        sim.modify(|w| {
            let server = w.servers.get_mut(&cp2).unwrap();
            server.labels.insert("rogue".into(), "yes".into());
        });
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "drift must show\n{out}");
        assert!(out.stdout.contains("noreturn-general-2"), "{out}");
        assert!(out.stdout.contains("rogue"), "{out}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("repair drift");
        assert_eq!(server_names(&sim), expected_names(2));
        let labels = sim.inspect(|w| w.servers[&cp2].labels.clone());
        assert!(!labels.contains_key("rogue"), "{labels:?}");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after repair\n{out}");

        // A changed node label: the pool's configs are re-applied in place.
        let before = pool_nodes(&ws, "platform");
        ws.write(
            "pools.auto.tfvars",
            &pools_labelled(2, r#"{ purpose = "platform", tier = "one" }"#),
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "{out}");
        assert!(out.stdout.contains("config_sha256"), "{out}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("re-apply configs");
        let after = pool_nodes(&ws, "platform");
        for ((name, id_before, sha_before), (_, id_after, sha_after)) in before.iter().zip(&after) {
            assert_eq!(id_before, id_after, "{name} must keep its server");
            assert_ne!(sha_before, sha_after, "{name} must get the new config");
        }
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after re-applying\n{out}");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 8);

        // Import a pool back into state.
        let address = "hct_worker_pool.this[\"platform\"]";
        ws.terraform(&["state", "rm", address])
            .expect_success("state rm");
        ws.terraform(&["import", address, "noreturn/platform"])
            .expect_success("import pool");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after import");
        assert_eq!(
            server_names(&sim),
            expected_names(2),
            "import must not create servers"
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after import\n{out}");

        // Import the cluster by name, with its secrets.
        let secrets = state_attribute(&ws, "hct_cluster.this", "machine_secrets");
        ws.write(
            "secrets.auto.tfvars",
            &format!("machine_secrets = <<EOT\n{secrets}EOT\n"),
        );
        ws.terraform(&["state", "rm", "hct_cluster.this"])
            .expect_success("state rm cluster");
        ws.terraform(&["import", "hct_cluster.this", "noreturn"])
            .expect_success("import cluster");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after cluster import");
        assert_eq!(
            server_names(&sim),
            expected_names(2),
            "import must not create servers"
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after cluster import\n{out}");

        ws.terraform(&["destroy", "-auto-approve"])
            .expect_success("destroy");
        assert!(
            server_names(&sim).is_empty(),
            "left behind: {:?}",
            server_names(&sim)
        );
        assert_eq!(placement_groups(&sim), 0);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_long_wait_promptly_and_keeps_the_servers_in_state() {
    let sim = sim().await;
    let ws = workspace(&sim);
    sim.add_fault(FaultSpec::parse(r#"{"talos": "slow_boot", "delay_ms": 600000}"#).unwrap());
    tokio::task::block_in_place(|| {
        // The pools create their servers beside the control plane's.
        let mut apply = apply_until_servers_exist(&ws, &sim, 9);
        std::thread::sleep(Duration::from_millis(500));
        // What Ctrl-C does: SIGINT to Terraform, which sends StopProvider.
        std::process::Command::new("kill")
            .args(["-INT", &apply.id().to_string()])
            .status()
            .unwrap();
        let stopped = std::time::Instant::now();
        let status = apply.wait().unwrap();
        assert!(!status.success());
        assert!(
            stopped.elapsed() < Duration::from_secs(15),
            "took {:?} to stop",
            stopped.elapsed()
        );
        let ids = control_plane_server_ids(&ws);
        assert_eq!(ids.len(), 3, "every server in state: {ids:?}");
    });
}

/// The server ids of `hct_cluster.this.control_plane_nodes` in state.
fn control_plane_server_ids(ws: &Workspace) -> Vec<i64> {
    resource_values(ws, "hct_cluster.this")["control_plane_nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["server_id"].as_i64())
        .collect()
}

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
        assert_eq!(server_names(&sim), expected_names(3));
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");
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
        assert_eq!(
            server_names(&sim),
            expected_names(3),
            "no orphans, no duplicates"
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");
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
        let out = ws
            .terraform(&["apply", "-auto-approve", "-var", "create_timeout=4s"])
            .expect_failure("unreachable node");
        assert!(
            out.stderr.contains("Timed out waiting for noreturn-cp-2"),
            "{out}"
        );
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
        let out = ws
            .terraform(&["apply", "-auto-approve", "-var", "create_timeout=4s"])
            .expect_failure("API server never ready");
        assert!(
            out.stderr.contains("Timed out waiting for noreturn-cp-3"),
            "{out}"
        );
        assert!(
            out.stderr.contains("waiting for the Kubernetes API server"),
            "{out}"
        );
        // Terraform wraps long lines.
        let words = unwrapped(&out.stderr);
        assert!(words.contains("[-]etcd failed: injected"), "{out}");
    });
}

/// The cluster's admin, as hct makes it from the machine secrets in state.
fn talos_admin(ws: &Workspace) -> Trust {
    let yaml = state_attribute(ws, "hct_cluster.this", "machine_secrets");
    let secrets = Secrets::from_yaml(&yaml).unwrap();
    let api = talos_api_credentials(&secrets, Duration::from_secs(3600)).unwrap();
    Trust::Admin(AdminCredentials {
        os_ca: api.ca,
        certificate: api.certificate,
        key: Secret::new(api.key),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_changed_outside_hct_shows_in_the_plan_and_is_put_back() {
    let sim = sim().await;
    let ws = workspace(&sim);
    let admin = tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        talos_admin(&ws)
    });
    let general_1 = NodeAddress::new("10.0.128.65".parse().unwrap(), Some(sim.proxy_addr()));
    let ids_before = pool_nodes(&ws, "general");

    // Someone edits noreturn-general-1's config with talosctl.
    let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
    let applied = node.machine_config().await.unwrap();
    let edited = applied.replace("purpose: general", "purpose: edited");
    assert_ne!(edited, applied, "the config carries the pool's node label");
    node.apply_configuration(edited.as_bytes(), ApplyMode::Auto)
        .await
        .unwrap();

    tokio::task::block_in_place(|| {
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "the edited config must show\n{out}");
        assert!(out.stdout.contains("config_sha256"), "{out}");
        assert!(
            out.stdout
                .contains(r#"hct_worker_pool.this["general"] will be updated in-place"#),
            "{out}"
        );
        assert!(
            !out.stdout
                .contains(r#"hct_worker_pool.this["platform"] will be updated"#),
            "{out}"
        );
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("put the config back");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after putting it back\n{out}");
    });
    let ids_after = pool_nodes(&ws, "general");
    assert_eq!(ids_before, ids_after, "same servers, same config hashes");
    let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
    assert_eq!(node.machine_config().await.unwrap(), applied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_configs_in_their_last_month_are_issued_again() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        // Eleven and a half months later: state holds configs issued then.
        let yaml = state_attribute(&ws, "hct_cluster.this", "machine_secrets");
        let secrets = Secrets::from_yaml(&yaml).unwrap();
        let plan_json = state_attribute(&ws, "hct_cluster.this", "network_plan");
        let plan_json: serde_json::Value = serde_json::from_str(&plan_json).unwrap();
        let plan = hct::network_plan::NetworkPlan::from_json(&plan_json).unwrap();
        let issued = SystemTime::now() - Duration::from_secs(345 * 24 * 3600);
        let old_talosconfig = talosconfig_at("noreturn", &plan, &secrets, issued).unwrap();
        let old_kubeconfig = admin_kubeconfig_at("noreturn", &plan, &secrets, issued).unwrap();
        let state_path = ws.path().join("terraform.tfstate");
        let mut state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
        let cluster = state["resources"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|r| r["type"] == "hct_cluster")
            .unwrap();
        let attributes = &mut cluster["instances"][0]["attributes"];
        attributes["talosconfig"] = json!(old_talosconfig.as_str());
        attributes["kubeconfig"] = json!(old_kubeconfig.as_str());
        state["serial"] = json!(state["serial"].as_i64().unwrap() + 1);
        std::fs::write(&state_path, state.to_string()).unwrap();

        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "the expiring configs must be renewed\n{out}");
        assert!(
            out.stdout
                .contains("hct_cluster.this will be updated in-place"),
            "{out}"
        );
        assert!(out.stdout.contains("~ talosconfig"), "{out}");
        assert!(out.stdout.contains("~ kubeconfig"), "{out}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("renew");
        let year = Duration::from_secs(360 * 24 * 3600);
        for name in ["talosconfig", "kubeconfig"] {
            let renewed = state_attribute(&ws, "hct_cluster.this", name);
            let expires = client_certificate_expiry(&renewed).unwrap();
            assert!(expires > SystemTime::now() + year, "{name} was not renewed");
        }
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after renewing\n{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_delivered_as_user_data_come_up_too() {
    let sim = sim().await;
    let ws = workspace(&sim);
    let opt_in = ["-var", "config_delivery=user_data"];
    tokio::task::block_in_place(|| {
        ws.terraform(&[&["apply", "-auto-approve"], &opt_in[..]].concat())
            .expect_success("apply with config_delivery = user_data");
        assert_eq!(server_names(&sim), expected_names(3));
        sim.inspect(|w| {
            for server in cluster_servers(w) {
                assert!(
                    server.user_data.is_some(),
                    "{} has no user data",
                    server.name
                );
            }
        });
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let (code, out) = plan_exit_code(&ws, &opt_in);
        assert_eq!(code, 0, "{out}");
    });
}

/// The Talos release each server runs, by name.
fn releases(sim: &SimHandle) -> BTreeMap<String, String> {
    sim.inspect(|w| {
        cluster_servers(w)
            .map(|s| {
                let release = s.talos.as_ref().map(|t| t.version.clone());
                (s.name.clone(), release.unwrap_or_default())
            })
            .collect()
    })
}

fn server_ids(sim: &SimHandle) -> BTreeMap<String, i64> {
    sim.inspect(|w| cluster_servers(w).map(|s| (s.name.clone(), s.id)).collect())
}

/// Applies `upgrade` (a newer `talos_version`) to the reference cluster on
/// Talos `to`'s releases and checks it went as hct promises: planned as an
/// in-place update; afterwards every node on `to`, the same servers, the
/// same Kubernetes version; one node at a time in each group, the control
/// plane first (Terraform applies the two pools side by side), seen both in
/// hct's log and in the sim's own timeline of its nodes.
fn upgrade_in_place(sim: &SimHandle, ws: &Workspace, upgrade: &[&str], to: &str) {
    let kubernetes = state_attribute(ws, "hct_cluster.this", "kubernetes_version");
    let ids = server_ids(sim);
    let (code, out) = plan_exit_code(ws, upgrade);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.stdout
            .contains("hct_cluster.this will be updated in-place"),
        "{out}"
    );
    let mut events = sim.events();
    let starts_before = talos_starts(sim);
    let log = apply_with_provider_log(ws, upgrade, "upgrade");
    let timeline = talos_timeline(&mut events);

    assert!(
        releases(sim).values().all(|r| r == to),
        "{:?}",
        releases(sim)
    );
    assert_eq!(server_ids(sim), ids, "upgraded in place, same servers");
    // An upgrade of Talos is not one of Kubernetes.
    assert_eq!(
        state_attribute(ws, "hct_cluster.this", "kubernetes_version"),
        kubernetes
    );
    let groups = ["-cp-", "-platform-", "-general-"];
    let steps = node_steps(&log, "upgrading Talos", ": upgraded");
    assert_eq!(steps.len(), 18, "{steps:#?}\n{log}");
    for group in groups {
        assert_eq!(
            steps.iter().filter(|s| s.contains(group)).count(),
            6,
            "{steps:#?}"
        );
    }
    assert_one_at_a_time(&steps, &groups);
    // The control plane first: the pools, applied beside the cluster, wait
    // until every control plane runs the release and is back in service,
    // before any worker goes down (the sim's own order).
    let last_cp = timeline
        .iter()
        .rposition(|(name, ..)| name.contains("-cp-"))
        .expect("the control planes restarted");
    let first_worker_down = timeline
        .iter()
        .position(|(name, healthy, _)| !name.contains("-cp-") && !healthy)
        .expect("a worker went down");
    assert!(
        last_cp < first_worker_down,
        "a worker went down before the control plane was done\n{timeline:#?}"
    );
    // Every node restarted, and no two of one group were out of service at once.
    for group in groups {
        let (most, restarted) = out_of_service_at_once(&starts_before, &timeline, group);
        assert_eq!(restarted.len(), 3, "{group}: {restarted:?}\n{timeline:#?}");
        assert_eq!(most, 1, "{group}: {most} nodes down at once\n{timeline:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_talos_version_upgrades_the_nodes_one_at_a_time() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        let out = ws
            .terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.11.3"])
            .expect_success("apply v1.11.3");
        // The release's known problem, and the way out.
        let words = unwrapped(&format!("{} {}", out.stdout, out.stderr));
        assert!(
            words.contains("The nodes run Talos v1.11.3, which has a known problem"),
            "{out}"
        );
        assert!(words.contains("hct upgrades the nodes in place"), "{out}");
        assert!(
            releases(&sim).values().all(|r| r == "v1.11.3"),
            "{:?}",
            releases(&sim)
        );
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let upgrade = ["-var", "talos_version=v1.12.6"];
        upgrade_in_place(&sim, &ws, &upgrade, "v1.12.6");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);

        let (code, out) = plan_exit_code(&ws, &upgrade);
        assert_eq!(code, 0, "plan after the upgrade\n{out}");

        // Someone upgrades noreturn-general-1 further by hand, and edits its
        // config: hct puts the config back but never downgrades the node.
        let admin = talos_admin(&ws);
        let general_1 = NodeAddress::new("10.0.128.65".parse().unwrap(), Some(sim.proxy_addr()));
        let handle = tokio::runtime::Handle::current();
        handle.block_on(async {
            let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
            let image = "factory.talos.dev/hcloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.12.7";
            node.upgrade(image).await.unwrap();
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while releases(&sim)["noreturn-general-1"] != "v1.12.7" {
            assert!(
                std::time::Instant::now() < deadline,
                "the manual upgrade never finished"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        handle.block_on(async {
            let edited = loop {
                // Back from its reboot when it answers again.
                if let Ok(mut node) = TalosClient::connect(&general_1, &admin).await
                    && let Ok(config) = node.machine_config().await
                {
                    let edited = config.replace("purpose: general", "purpose: edited");
                    if node
                        .apply_configuration(edited.as_bytes(), ApplyMode::Auto)
                        .await
                        .is_ok()
                    {
                        break edited;
                    }
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the node never came back"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            assert!(edited.contains("purpose: edited"));
        });
        let out = ws
            .terraform(&[&["apply", "-auto-approve"], &upgrade[..]].concat())
            .expect_failure("a node on a newer release");
        let words = unwrapped(&out.stderr);
        assert!(words.contains("Node runs a newer Talos"), "{out}");
        assert!(
            words.contains("noreturn-general-1 runs Talos v1.12.7, which is not older"),
            "{out}"
        );
        assert_eq!(releases(&sim)["noreturn-general-1"], "v1.12.7");
    });
}

/// The machine config noreturn-general-1 runs, as talosctl would read it.
fn general_1_config(sim: &SimHandle, ws: &Workspace) -> String {
    let admin = talos_admin(ws);
    let general_1 = NodeAddress::new("10.0.128.65".parse().unwrap(), Some(sim.proxy_addr()));
    tokio::runtime::Handle::current().block_on(async {
        let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
        node.machine_config().await.unwrap()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_on_talos_v1_13_comes_up_with_its_configs() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        let v1_13 = ["-var", "talos_version=v1.13.9"];
        ws.terraform(&[&["apply", "-auto-approve"], &v1_13[..]].concat())
            .expect_success("apply v1.13.9");
        assert_eq!(server_names(&sim), expected_names(3));
        assert!(
            releases(&sim).values().all(|r| r == "v1.13.9"),
            "{:?}",
            releases(&sim)
        );
        // Talos v1.13's default Kubernetes.
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "kubernetes_version"),
            "v1.36.3"
        );
        let config = general_1_config(&sim, &ws);
        assert!(config.contains("kind: HostnameConfig"), "{config}");
        assert!(config.contains("hostname: noreturn-general-1"), "{config}");
        assert!(config.contains("kind: LinkConfig"), "{config}");
        assert!(
            !config.contains("network: {}"),
            "v1.13 has no machine.network"
        );
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let (code, out) = plan_exit_code(&ws, &v1_13);
        assert_eq!(code, 0, "plan after the apply\n{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn talos_v1_12_upgrades_to_v1_13_in_place() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.12.6"])
            .expect_success("apply v1.12.6");
        assert!(
            releases(&sim).values().all(|r| r == "v1.12.6"),
            "{:?}",
            releases(&sim)
        );
        assert!(general_1_config(&sim, &ws).contains("network: {}"));
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "kubernetes_version"),
            "v1.35.2"
        );
        // Kubernetes v1.35 is within Talos v1.13's range and stays.
        let upgrade = ["-var", "talos_version=v1.13.9"];
        upgrade_in_place(&sim, &ws, &upgrade, "v1.13.9");
        // The nodes run the configs made for v1.13.
        let config = general_1_config(&sim, &ws);
        assert!(!config.contains("network: {}"), "{config}");
        assert!(config.contains("hcloud-installer/"), "{config}");
        assert!(config.contains(":v1.13.9"), "{config}");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);

        let (code, out) = plan_exit_code(&ws, &upgrade);
        assert_eq!(code, 0, "plan after the upgrade\n{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_stopped_half_way_is_finished_by_the_next_apply() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.11.3"])
            .expect_success("apply v1.11.3");
        let ids = server_ids(&sim);
        // noreturn-cp-2 takes 25 s to come back; the update may take 8.
        sim.add_fault(
            FaultSpec::parse(
                r#"{"talos": "slow_boot", "server": "noreturn-cp-2", "delay_ms": 25000}"#,
            )
            .unwrap(),
        );
        let out = ws
            .terraform(&[
                "apply",
                "-auto-approve",
                "-var",
                "talos_version=v1.12.6",
                "-var",
                "update_timeout=8s",
            ])
            .expect_failure("upgrade times out");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("Timed out waiting for noreturn-cp-2"),
            "{out}"
        );
        assert!(words.contains("after the upgrade"), "{out}");
        let halfway = releases(&sim);
        assert_eq!(halfway["noreturn-cp-1"], "v1.12.6", "{halfway:?}");
        assert_eq!(halfway["noreturn-cp-3"], "v1.11.3", "{halfway:?}");
        assert!(
            halfway
                .iter()
                .filter(|(n, _)| !n.contains("-cp-"))
                .all(|(_, r)| r == "v1.11.3"),
            "workers wait for the control plane: {halfway:?}"
        );

        sim.clear_faults();
        ws.terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.12.6"])
            .expect_success("finish the upgrade");
        assert!(
            releases(&sim).values().all(|r| r == "v1.12.6"),
            "{:?}",
            releases(&sim)
        );
        assert_eq!(server_ids(&sim), ids);
        let (code, out) = plan_exit_code(&ws, &["-var", "talos_version=v1.12.6"]);
        assert_eq!(code, 0, "plan after finishing\n{out}");
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

/// The server type of each server, by name.
fn server_types(sim: &SimHandle) -> BTreeMap<String, String> {
    sim.inspect(|w| {
        cluster_servers(w)
            .map(|s| (s.name.clone(), s.server_type.clone()))
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_type_resizes_the_servers_one_at_a_time() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let ids = server_ids(&sim);
        let disks_before = sim.inspect(|w| {
            cluster_servers(w)
                .map(|s| (s.name.clone(), s.primary_disk_size))
                .collect::<BTreeMap<_, _>>()
        });

        ws.write(
            "pools.auto.tfvars",
            &pools(3).replace(r#"sku = "cx33""#, r#"sku = "cx43""#),
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "{out}");
        assert!(
            out.stdout
                .contains(r#"hct_worker_pool.this["platform"] will be updated in-place"#),
            "{out}"
        );
        let cp_type = ["-var", "control_plane_server_type=cx33"];
        let log = apply_with_provider_log(&ws, &cp_type, "resize");

        for (name, server_type) in server_types(&sim) {
            let wanted = if name.contains("-platform-") {
                "cx43"
            } else if name.contains("-cp-") {
                "cx33"
            } else {
                "cx23"
            };
            assert_eq!(server_type, wanted, "{name}");
        }
        assert_eq!(server_ids(&sim), ids, "the same servers, resized");
        let disks_after = sim.inspect(|w| {
            cluster_servers(w)
                .map(|s| (s.name.clone(), s.primary_disk_size))
                .collect::<BTreeMap<_, _>>()
        });
        assert_eq!(disks_after, disks_before, "disks keep their size");
        // One at a time per group: each is back in service before the next
        // of its group goes down (the pool resizes beside the control plane:
        // only Talos upgrades wait for it).
        let steps = node_steps(
            &log,
            "changing the server type",
            "back in service on the new server type",
        );
        assert_eq!(steps.len(), 12, "{steps:#?}\n{log}");
        assert_one_at_a_time(&steps, &["-cp-", "-platform-"]);
        let (code, out) = plan_exit_code(&ws, &cp_type);
        assert_eq!(code, 0, "plan after resizing\n{out}");

        // Drift: a server resized in the Hetzner Console is resized back.
        let general_1 = server_id(&sim, "noreturn-general-1");
        sim.modify(|w| w.servers.get_mut(&general_1).unwrap().server_type = "cx33".into());
        let (code, out) = plan_exit_code(&ws, &cp_type);
        assert_eq!(code, 2, "{out}");
        let words = unwrapped(&out.stdout);
        assert!(
            words.contains(r#"~ server_type = "cx33" -> "cx23""#),
            "{out}"
        );
        ws.terraform(&[&["apply", "-auto-approve"], &cp_type[..]].concat())
            .expect_success("resize back");
        assert_eq!(server_types(&sim)["noreturn-general-1"], "cx23");
        let (code, out) = plan_exit_code(&ws, &cp_type);
        assert_eq!(code, 0, "plan after resizing back\n{out}");

        // Disks do not shrink: the platform servers keep their 80 GB, which
        // cx23 (40 GB) cannot hold. Refused before any server goes down.
        ws.write(
            "pools.auto.tfvars",
            &pools(3).replace(r#"sku = "cx33""#, r#"sku = "cx23""#),
        );
        let out = ws
            .terraform(&[&["apply", "-auto-approve"], &cp_type[..]].concat())
            .expect_failure("a type with a smaller disk");
        let words = unwrapped(&out.stderr);
        assert!(words.contains("Server type too small"), "{out}");
        assert!(words.contains("Hetzner cannot shrink disks"), "{out}");
        sim.inspect(|w| {
            for server in cluster_servers(w) {
                assert_eq!(server.status, ServerStatus::Running, "{}", server.name);
            }
        });
        assert_eq!(server_types(&sim)["noreturn-platform-1"], "cx43");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_killed_mid_apply_then_apply_again_converges() {
    let sim = sim().await;
    let ws = workspace(&sim);
    // Nodes boot slowly (15 s), so the apply is still waiting when it is killed.
    sim.add_fault(FaultSpec::parse(r#"{"talos": "slow_boot", "delay_ms": 15000}"#).unwrap());
    tokio::task::block_in_place(|| {
        let mut apply = apply_until_servers_exist(&ws, &sim, 3);
        let provider = support::provider_child(apply.id()).expect("the provider process");
        // SAFETY-free: a plain kill(2) of our own child's child.
        std::process::Command::new("kill")
            .args(["-9", &provider.to_string()])
            .status()
            .unwrap();
        let status = apply.wait().unwrap();
        assert!(!status.success());

        sim.clear_faults();
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after the kill");
        assert_eq!(
            server_names(&sim),
            expected_names(3),
            "no orphans, no duplicates"
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");
        ws.terraform(&["destroy", "-auto-approve"])
            .expect_success("destroy");
        assert!(server_names(&sim).is_empty());
    });
}
