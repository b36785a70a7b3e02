//! `hct_cluster` and `hct_worker_pool` through a real Terraform against
//! hct-sim, on the shipped example `examples/private-cluster` (the reference
//! layout): apply, no-change plan, scale a pool 3 → 5 → 2, drift (servers,
//! labels, configs changed with talosctl), import,
//! destroy; Talos upgrades (v1.11 → v1.12 → v1.13) and a cluster on v1.13;
//! the configs each node runs, judged by Talos' own machinery at the node's
//! release; and the ways it goes wrong: API faults, a failing action, a node
//! that never comes up, a network without the default route, and the
//! provider killed mid-apply. One file per theme (`lifecycle`, `faults`,
//! `drift`, `upgrades`); the helpers they share are here.

use crate::peers;
use crate::support;

mod drift;
mod faults;
mod lifecycle;
mod upgrades;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use hct::secret::Secret;
use hct::talos::Secrets;
use hct::talos::api::{AdminCredentials, ApplyMode, NodeAddress, TalosClient, Trust};
use hct::talos::client_config::{
    admin_kubeconfig_at, client_certificate_expiry, talos_api_credentials, talosconfig_at,
};
use hct_sim::resources::servers::ServerStatus;
use hct_sim::{FaultSpec, SimHandle};
use peers::talos_check::{Config, assert_clean, check};
use serde_json::json;
use support::Workspace;
use support::reference::{
    assert_etcd_snapshot, pools, pools_labelled, resource_values, snapshots, state_attribute,
    workspace,
};
use support::sim::{cluster_servers, releases, server_ids};
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

fn server_names(sim: &SimHandle) -> BTreeSet<String> {
    sim.inspect(|w| cluster_servers(w).map(|s| s.name.clone()).collect())
}

/// After an apply: exactly the reference cluster's servers with `general`
/// workers in the general pool (no orphans, no duplicates), and an empty plan.
fn assert_converged(sim: &SimHandle, ws: &Workspace, general: u32, after: &str) {
    assert_eq!(
        server_names(sim),
        expected_names(general),
        "servers after {after}"
    );
    let (code, out) = plan_exit_code(ws, &[]);
    assert_eq!(code, 0, "plan after {after}\n{out}");
}

/// Applies with a 4 s create timeout under a fault that keeps `node` from
/// coming up; the apply fails naming it.
fn apply_timing_out_on(ws: &Workspace, node: &str) -> support::TfOutput {
    let out = ws
        .terraform(&["apply", "-auto-approve", "-var", "create_timeout=4s"])
        .expect_failure(&format!("{node} never ready"));
    assert!(
        out.stderr
            .contains(&format!("Timed out waiting for {node}")),
        "{out}"
    );
    out
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
        // Talos v1.14's checker is built from ../shared when it is there;
        // without it those configs are judged by nothing (said, not passed).
        let Some(release) = peers.talos_release_of_minor_or_skip(minor) else {
            continue;
        };
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
