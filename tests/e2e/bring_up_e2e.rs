//! Parallel bring-up and rolling changes through a real Terraform against
//! hct-sim, on the shipped example `examples/private-cluster` (the parallel
//! form: `hct_cluster_secrets` feeds the cluster and its pools):
//! workers created while the control plane comes up, seen in the sim's own
//! event order; a cluster applied in the serial form (pools on
//! `hct_cluster.worker_join`) moved to the parallel form without a server
//! replaced; and a pool's `update_strategy.max_unavailable`, honoured
//! across an upgrade (the sim's timeline of its nodes) and checked at plan.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use hct_sim::{FaultSpec, Sim, SimEvent, SimHandle, SimOptions};
use support::reference::{EXAMPLE, pools, state_attribute, workspace};
use support::sim::{releases, server_ids};
use support::timeline::{out_of_service_at_once, talos_starts, talos_timeline};
use support::{apply_with_provider_log, plan_exit_code, unwrapped};

async fn sim() -> SimHandle {
    support::sim::start().await
}

/// How many servers were created (`POST /servers`) so far.
fn servers_posted(sim: &SimHandle) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.route == "POST /servers")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_are_created_while_the_control_plane_comes_up() {
    let sim = sim().await;
    let ws = workspace(&sim);
    // The first control plane boots slowly, so the control plane is
    // certainly not up when the workers are configured.
    sim.add_fault(
        FaultSpec::parse(r#"{"talos": "slow_boot", "server": "noreturn-cp-1", "delay_ms": 2000}"#)
            .unwrap(),
    );
    let mut events = sim.events();
    let log = tokio::task::block_in_place(|| apply_with_provider_log(&ws, &[], "apply"));

    // The sim's own order: every worker server was created before any
    // control plane was healthy (which needs etcd, so the bootstrap).
    let names: BTreeMap<i64, String> = server_ids(&sim)
        .into_iter()
        .map(|(name, id)| (id, name))
        .collect();
    let mut order = Vec::new();
    loop {
        match events.try_recv() {
            Ok(SimEvent::ServerCreated { server }) => {
                order.push(format!("created {}", names[&server]));
            }
            Ok(SimEvent::TalosNode { name, healthy, .. }) if healthy => {
                order.push(format!("healthy {name}"));
            }
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => break,
            Err(e) => panic!("the sim's events: {e}"),
        }
    }
    let first_cp_healthy = order
        .iter()
        .position(|e| e.starts_with("healthy noreturn-cp-"))
        .unwrap_or_else(|| panic!("no control plane became healthy: {order:#?}"));
    let workers_created: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(_, e)| e.starts_with("created ") && !e.contains("-cp-"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(workers_created.len(), 6, "{order:#?}");
    assert!(
        workers_created.iter().all(|i| *i < first_cp_healthy),
        "workers must be created before the control plane is up: {order:#?}"
    );
    // Each worker waited for the control plane, and said so.
    let waiting = "waiting for the control plane at https://10.0.128.17:6443";
    assert!(log.contains(waiting), "{log}");
    for node in ["noreturn-platform-1", "noreturn-general-3"] {
        assert!(
            log.lines()
                .any(|l| l.contains(&format!("{node}: {waiting}"))),
            "{node} logged no wait for the control plane:\n{log}"
        );
    }
    // Every node joined, and a second plan has nothing to do.
    assert_eq!(releases(&sim).len(), 9);
    tokio::task::block_in_place(|| {
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");
    });
}

/// `examples/private-cluster` in the serial form: the settings on
/// `hct_cluster`, the pools on its `worker_join` (hct's only form before
/// `hct_cluster_secrets`).
fn serial_example() -> String {
    let start = EXAMPLE
        .find("# The cluster-wide settings and secrets")
        .expect("the example's hct_cluster_secrets");
    let end = EXAMPLE.find("output \"endpoint\"").expect("its outputs");
    let serial = r#"resource "hct_cluster" "this" {
  name            = var.cluster_name
  network_id      = var.network_id
  network_plan    = data.hct_network_plan.this.json
  talos_version   = var.talos_version
  image_id        = hct_talos_image.this.id
  schematic_id    = hct_talos_image.this.schematic_id
  control_plane   = { server_type = var.control_plane_server_type, location = var.location }
  machine_secrets = var.machine_secrets
  config_delivery = var.config_delivery

  etcd_backup = var.etcd_snapshot_recipients == null ? null : {
    local_directory = "${path.root}/etcd-snapshots"
    age_recipients  = var.etcd_snapshot_recipients
  }

  timeouts {
    create = var.create_timeout
    update = var.update_timeout
  }
}

resource "hct_worker_pool" "this" {
  for_each    = var.worker_pools
  worker_join = hct_cluster.this.worker_join
  name        = each.key
  server_type = each.value.sku
  location    = var.location
  node_labels = each.value.labels
}

"#;
    format!("{}{serial}{}", &EXAMPLE[..start], &EXAMPLE[end..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serial_cluster_moves_to_the_parallel_form_without_replacing_servers() {
    let sim = sim().await;
    let ws = workspace(&sim);
    ws.write("main.tf", &serial_example());
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply in the serial form");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "the serial form plans no change\n{out}");
        let ids = server_ids(&sim);
        assert_eq!(ids.len(), 9);
        let posted = servers_posted(&sim);

        // The settings move to hct_cluster_secrets, which adopts the
        // cluster's secrets from state.
        let secrets = state_attribute(&ws, "hct_cluster.this", "machine_secrets");
        ws.write(
            "secrets.auto.tfvars",
            &format!("machine_secrets = <<EOT\n{secrets}EOT\n"),
        );
        ws.write("main.tf", EXAMPLE);
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "{out}");
        assert!(
            out.stdout
                .contains("hct_cluster_secrets.this will be created"),
            "{out}"
        );
        // The adopted secrets make the bundle known at plan time, and equal
        // to the one the cluster made (the pools' certificates of this
        // period included): the cluster has nothing to change.
        assert!(!out.stdout.contains("hct_cluster.this will be"), "{out}");
        assert!(!out.stdout.contains("must be replaced"), "{out}");
        assert!(out.stdout.contains(" 0 to destroy"), "{out}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply in the parallel form");
        assert_eq!(server_ids(&sim), ids, "the same servers");
        assert_eq!(servers_posted(&sim), posted, "no server created");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after the move\n{out}");
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "worker_join"),
            state_attribute(&ws, "hct_cluster_secrets.this", "worker_join"),
            "the cluster reads the one bundle"
        );

        // The secrets stay in state without the file.
        std::fs::remove_file(ws.path().join("secrets.auto.tfvars")).unwrap();
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan without the secrets file\n{out}");

        // A setting given twice is refused, naming it.
        let twice = EXAMPLE.replace(
            "  control_plane   = {",
            "  talos_version = var.talos_version\n  control_plane   = {",
        );
        assert_ne!(twice, EXAMPLE);
        ws.write("main.tf", &twice);
        let out = ws
            .terraform(&["plan"])
            .expect_failure("a setting given twice");
        let words = unwrapped(&out.stderr);
        assert!(words.contains("Cluster settings given twice"), "{out}");
        assert!(words.contains("talos_version = var.talos_version"), "{out}");
    });
}

/// A sim whose Talos upgrades keep a node down for a second, so the sim's
/// own timeline (its supervisor looks every 50 ms) sees which were down
/// together.
async fn sim_with_slow_upgrades() -> SimHandle {
    let options = SimOptions::seeded_fast();
    Sim::start(SimOptions {
        durations: options
            .durations
            .clone()
            .with("talos_upgrade", Duration::from_secs(1)),
        ..options
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_unavailable_bounds_how_many_pool_nodes_go_down_at_once() {
    let sim = sim_with_slow_upgrades().await;
    let ws = workspace(&sim);
    ws.write("pools.auto.tfvars", &pools(5));
    tokio::task::block_in_place(|| {
        // Checked at plan time, at the attribute.
        for wrong in ["0", "0%", "150%", "abc"] {
            let out = ws
                .terraform(&["plan", "-var", &format!("max_unavailable={wrong}")])
                .expect_failure("an invalid max_unavailable");
            let words = unwrapped(&out.stderr);
            assert!(words.contains("Invalid max_unavailable"), "{wrong}: {out}");
            assert!(
                words.contains("max_unavailable = var.max_unavailable"),
                "{wrong}: {out}"
            );
        }

        let two = ["-var", "max_unavailable=2"];
        ws.terraform(
            &[
                &["apply", "-auto-approve", "-var", "talos_version=v1.11.3"],
                &two[..],
            ]
            .concat(),
        )
        .expect_success("apply v1.11.3");
        let ids = server_ids(&sim);
        let mut events = sim.events();
        let starts_before = talos_starts(&sim);
        apply_with_provider_log(
            &ws,
            &[&["-var", "talos_version=v1.12.6"], &two[..]].concat(),
            "upgrade",
        );

        let timeline = talos_timeline(&mut events);
        assert!(
            releases(&sim).values().all(|r| r == "v1.12.6"),
            "{:?}",
            releases(&sim)
        );
        assert_eq!(server_ids(&sim), ids, "upgraded in place");

        let (most, restarted) = out_of_service_at_once(&starts_before, &timeline, "-general-");
        assert_eq!(restarted.len(), 5, "{restarted:?}\n{timeline:#?}");
        assert_eq!(
            most, 2,
            "general: at most 2 at once, and 2 at some point\n{timeline:#?}"
        );
        let (most, restarted) = out_of_service_at_once(&starts_before, &timeline, "-cp-");
        assert_eq!(restarted.len(), 3, "{restarted:?}");
        assert_eq!(most, 1, "control planes one at a time\n{timeline:#?}");
        // Both pools together stay within the largest budget.
        let workers: Vec<(String, bool, u64)> = timeline
            .iter()
            .filter(|(name, ..)| !name.contains("-cp-"))
            .cloned()
            .collect();
        let (most, restarted) = out_of_service_at_once(&starts_before, &workers, "noreturn-");
        assert_eq!(restarted.len(), 8, "{restarted:?}");
        assert!(
            most <= 2,
            "the cluster's pools: {most} at once\n{timeline:#?}"
        );

        // With 1 (the default): never two of a pool, nor of the cluster's pools.
        let mut events = sim.events();
        let starts_before = talos_starts(&sim);
        apply_with_provider_log(&ws, &["-var", "talos_version=v1.13.9"], "upgrade with 1");
        let timeline = talos_timeline(&mut events);
        assert!(
            releases(&sim).values().all(|r| r == "v1.13.9"),
            "{:?}",
            releases(&sim)
        );
        let workers: Vec<(String, bool, u64)> = timeline
            .iter()
            .filter(|(name, ..)| !name.contains("-cp-"))
            .cloned()
            .collect();
        let (most, restarted) = out_of_service_at_once(&starts_before, &workers, "noreturn-");
        assert_eq!(restarted.len(), 8, "{restarted:?}\n{timeline:#?}");
        assert_eq!(most, 1, "one at a time\n{timeline:#?}");
        let (code, out) = plan_exit_code(&ws, &["-var", "talos_version=v1.13.9"]);
        assert_eq!(code, 0, "{out}");
    });
}
