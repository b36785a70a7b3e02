//! The fault matrix (issue 12): each step of a cluster apply against each
//! class of fault, through the real CLI (`$HCT_CLI`) against hct-sim, on a
//! small cluster (one control plane, a pool `general` of one node).
//!
//! Rows are the steps; columns the faults: a 429 storm, 5xx, `locked`, a
//! failed action, an unreachable node, the provider SIGKILLed, and an answer
//! lost after the request was carried out. A cell injects its fault at its
//! step and holds hct to one contract: the operation rides the fault out,
//! or fails with a diagnostic naming the step (and the node, where there is
//! one), or (SIGKILL) dies; then, faults cleared, the same operation run
//! again converges, a plan afterwards is empty, and the sim's servers and
//! placement groups are exactly those in state. A failed operation must
//! already have every server that exists in state. Cells that make no sense
//! say why in one word. The cells run concurrently, each with its own sim and
//! workspace; `HCT_FAULT_MATRIX_JOBS` (default 8: a cell mostly waits) bounds
//! how many at once, and `HCT_FAULT_MATRIX_ONLY=attach,SIGKILL` runs the
//! cells whose labels contain one of the words.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hct_sim::{FaultSpec, SimHandle};
use support::cluster_state::{agree, every_server_in_state};
use support::unwrapped;
use support::{TfOutput, Workspace};

use support::fault_cells::{Cell, Expect, FAULTS, Fault, Operation, STEPS, Step, Trigger};

const MAIN_TF: &str = r#"
terraform {
  required_providers {
    hct = {
      source = "registry.hct.internal/hct/hct"
    }
  }
}

provider "hct" {}

variable "network_id" {
  type = number
}

variable "general_nodes" {
  type = number
}

variable "machine_secrets" {
  type      = string
  sensitive = true
}

variable "cp_timeout" {
  type    = string
  default = "5m"
}

variable "pool_timeout" {
  type    = string
  default = "5m"
}

data "hct_network_plan" "this" {
  network_cidr  = "10.0.0.0/16"
  node_subnet   = "10.0.128.0/24"
  control_plane = { cidr = "10.0.128.16/28", nodes = 1 }
  worker_pools  = { general = { cidr = "10.0.128.64/27", nodes = var.general_nodes } }
  service_cidr  = "10.0.192.0/21"
  pod_cidr      = "10.0.224.0/19"
}

resource "hct_talos_image" "this" {
  talos_version   = "v1.12.6"
  architecture    = "amd64"
  location        = "nbg1"
  keep_on_destroy = true
}

# The secrets are in state before the first server exists: a killed run's
# servers carry their fingerprint, so the rerun adopts them.
resource "hct_cluster_secrets" "this" {
  name            = "fm"
  machine_secrets = var.machine_secrets
  network_id      = var.network_id
  network_plan    = data.hct_network_plan.this.json
  talos_version   = "v1.12.6"
  image_id        = hct_talos_image.this.id
  schematic_id    = hct_talos_image.this.schematic_id
}

resource "hct_cluster" "this" {
  worker_join     = hct_cluster_secrets.this.worker_join
  machine_secrets = hct_cluster_secrets.this.machine_secrets
  control_plane   = { server_type = "cx23", location = "nbg1" }
  # The cells fault Hetzner's steps; the scale-down's etcd snapshot is
  # another suite's (cluster_e2e::upgrades).
  skip_pre_change_snapshot = true

  timeouts {
    create = var.cp_timeout
    update = var.cp_timeout
    delete = var.cp_timeout
  }
}

resource "hct_worker_pool" "general" {
  worker_join = hct_cluster_secrets.this.worker_join
  depends_on  = [hct_cluster.this]
  name        = "general"
  server_type = "cx23"
  location    = "nbg1"

  timeouts {
    create = var.pool_timeout
    update = var.pool_timeout
    delete = var.pool_timeout
  }
}
"#;

/// How long the "unreachable" cells let the timed-out resource wait. The
/// whole create counts against it, not only the faulty step: unloaded, the
/// health wait starts about 2 s in; the rest is room for a loaded machine.
const SHORT_TIMEOUT: &str = "20s";
/// How long a SIGKILL cell waits for its step to be reached.
const KILL_PATIENCE: Duration = Duration::from_secs(120);

/// One secrets bundle, adopted by every cell: each cell has a sim of its
/// own, and a bundle generated at apply (its RSA-4096 key) costs about a
/// second of CPU, which the matrix would pay for each of its cells, twice
/// per `scripts/test`. Generation itself is tested elsewhere.
fn machine_secrets() -> &'static str {
    static SECRETS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SECRETS.get_or_init(|| hct::talos::Secrets::generate().unwrap().to_yaml())
}

fn workspace(sim: &SimHandle) -> Workspace {
    let mut ws = Workspace::dev_override(&[("main.tf", MAIN_TF)]);
    ws.write(
        "network.auto.tfvars",
        &format!("network_id = {}\n", support::sim::seeded_network(sim)),
    );
    ws.write(
        "secrets.auto.tfvars.json",
        &serde_json::json!({ "machine_secrets": machine_secrets() }).to_string(),
    );
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token())
        .env("HCT_TALOS_PROXY", sim.proxy_url())
        .env("HCT_POLL_INTERVAL", "50ms");
    ws
}

/// The CLI arguments of an operation on the cluster with `general` pool
/// nodes; `short` lowers the timeouts of the resource a Talos fault stalls.
fn arguments(op: Operation, general: u32, short: Option<Step>) -> Vec<String> {
    let mut args: Vec<String> = match op {
        Operation::Destroy => vec!["destroy".into(), "-auto-approve".into()],
        _ => vec!["apply".into(), "-auto-approve".into()],
    };
    args.extend(["-var".into(), format!("general_nodes={general}")]);
    match short {
        Some(Step::PoolJoin) => {
            args.extend(["-var".into(), format!("pool_timeout={SHORT_TIMEOUT}")])
        }
        Some(_) => args.extend(["-var".into(), format!("cp_timeout={SHORT_TIMEOUT}")]),
        None => {}
    }
    args
}

fn run(ws: &Workspace, args: &[String]) -> TfOutput {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ws.terraform(&args)
}

/// The first diagnostic of a failed run: its summary and the first line of
/// its detail.
fn diagnostic_summary(out: &TfOutput) -> String {
    // Terraform frames diagnostics in "│ " and shows where in the config
    // the resource is ("with …", "on main.tf line …", "46: resource …").
    let mut lines = out
        .stderr
        .lines()
        .map(|l| l.trim_start_matches(['│', '╷', '╵']).trim());
    let Some(summary) = lines.find_map(|l| l.strip_prefix("Error: ")) else {
        return "no diagnostic".into();
    };
    let source_line = |l: &str| {
        l.split_once(':')
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    let detail = lines
        .filter(|l| !l.is_empty() && !l.starts_with("with ") && !l.starts_with("on "))
        .find(|l| !source_line(l))
        .unwrap_or_default();
    let mut text = format!("{summary}: {detail}");
    if text.chars().count() > 160 {
        text = text.chars().take(160).collect::<String>() + "…";
    }
    text
}

fn add_faults(sim: &SimHandle, faults: &[String]) {
    for fault in faults {
        sim.add_fault(FaultSpec::parse(fault).unwrap_or_else(|e| panic!("{e}")));
    }
}

/// SIGKILLs the provider the CLI `child` runs; false if there is none yet.
fn kill_provider(child: &std::process::Child) -> bool {
    let Some(pid) = support::provider_child(child.id()) else {
        return false;
    };
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success()
}

/// Runs the operation and, once the sim shows `when`, does `act` to it
/// (false: not done, again at the next look); the CLI's output.
fn acting_at(
    ws: &Workspace,
    sim: &SimHandle,
    args: &[String],
    when: Trigger,
    mut act: impl FnMut(&std::process::Child) -> bool,
) -> Result<TfOutput, String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out_path = ws.path().join("killed.stdout");
    let err_path = ws.path().join("killed.stderr");
    let mut child = ws
        .command(&args)
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut done = false;
    while !done {
        if let Some(status) = child.try_wait().unwrap() {
            return Err(format!(
                "the operation ended ({status}) before the sim showed {when:?}:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            ));
        }
        if started.elapsed() > KILL_PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the sim never showed {when:?}"));
        }
        if when.reached(sim) {
            done = act(&child);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = child.wait().unwrap();
    Ok(TfOutput {
        status,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    })
}

/// One cell, start to end. Ok: what happened, for the matrix; Err: how
/// it broke its contract.
fn run_cell(sim: &SimHandle, cell: &Cell) -> Result<String, String> {
    let ws = workspace(sim);
    let op = cell.step.operation();
    // The cluster the operation starts from.
    match op {
        Operation::Create => {}
        Operation::ScaleDown => {
            run(&ws, &arguments(Operation::Create, 2, None)).expect_success("the two-node pool");
        }
        Operation::Destroy => {
            run(&ws, &arguments(Operation::Create, 1, None)).expect_success("the cluster");
        }
    }
    let outcome = match &cell.expect {
        Expect::NotApplicable(_) => unreachable!("n/a cells are not run"),
        Expect::RidesOut { faults } => {
            add_faults(sim, faults);
            let out = run(&ws, &arguments(op, 1, None));
            if !out.success() {
                return Err(format!(
                    "did not ride it out: {}\n{out}",
                    diagnostic_summary(&out)
                ));
            }
            let left = sim.faults_json();
            let unused = left["routes"].as_array().map_or(0, Vec::len);
            if unused > 0 {
                return Err(format!("the injected fault never fired in full: {left}"));
            }
            "rides out".to_string()
        }
        Expect::Fails {
            faults,
            names,
            from,
        } => {
            let short = cell.fault == Fault::Unreachable;
            let args = arguments(op, 1, short.then_some(cell.step));
            let out = match from {
                None => {
                    add_faults(sim, faults);
                    run(&ws, &args)
                }
                Some(when) => acting_at(&ws, sim, &args, *when, |_| {
                    add_faults(sim, faults);
                    true
                })?,
            };
            if out.success() {
                return Err(format!("succeeded despite the fault\n{out}"));
            }
            let words = unwrapped(&out.stderr);
            let missing: Vec<&&str> = names.iter().filter(|n| !words.contains(**n)).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "the diagnostic does not name {missing:?}: {}\n{out}",
                    diagnostic_summary(&out)
                ));
            }
            every_server_in_state(sim, &ws).map_err(|e| format!("after the failure: {e}"))?;
            format!("fails: {}", diagnostic_summary(&out))
        }
        Expect::Killed { stall, when } => {
            add_faults(sim, stall);
            let out = acting_at(&ws, sim, &arguments(op, 1, None), *when, kill_provider)?;
            if out.success() {
                return Err(format!("the killed operation succeeded\n{out}"));
            }
            format!("killed at {when:?}; rerun converges")
        }
    };
    sim.clear_faults();
    // Bootstrap once in a cluster's life: while a server that held etcd
    // data before the rerun is still there, hct-sim's own log shows no
    // Bootstrap in it (a create that failed is replaced: its servers go).
    let held_etcd = support::sim::servers_with_etcd_data(sim);
    let since = support::sim::talos_calls_count(sim);
    let rerun = run(&ws, &arguments(op, 1, None));
    if !rerun.success() {
        return Err(format!(
            "the rerun failed: {}\n{rerun}",
            diagnostic_summary(&rerun)
        ));
    }
    let again = support::sim::talos_calls_since(sim, since, &["Bootstrap"]);
    let kept: Vec<_> = support::sim::servers_with_etcd_data(sim)
        .intersection(&held_etcd)
        .copied()
        .collect();
    if !again.is_empty() && !kept.is_empty() {
        let to: Vec<&str> = again.iter().map(|c| c.node.as_str()).collect();
        return Err(format!(
            "servers {kept:?} kept their etcd data, yet the rerun sent Bootstrap to {to:?}"
        ));
    }
    let mut plan = vec!["plan", "-detailed-exitcode", "-var", "general_nodes=1"];
    if op == Operation::Destroy {
        plan.push("-destroy");
    }
    let planned = ws.terraform(&plan);
    if planned.status.code() != Some(0) {
        return Err(format!(
            "the plan after the rerun is not empty ({})\n{planned}",
            planned.status
        ));
    }
    let expected: BTreeSet<String> = match op {
        Operation::Destroy => BTreeSet::new(),
        _ => ["fm-cp-1", "fm-general-1"].map(String::from).into(),
    };
    agree(sim, &ws, &expected).map_err(|e| format!("after the rerun: {e}"))?;
    Ok(outcome)
}

fn selected(cell: &Cell) -> bool {
    match std::env::var("HCT_FAULT_MATRIX_ONLY") {
        Ok(words) if !words.trim().is_empty() => {
            let label = cell.label();
            words.split(',').any(|w| label.contains(w.trim()))
        }
        _ => true,
    }
}

fn jobs() -> usize {
    std::env::var("HCT_FAULT_MATRIX_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .filter(|j| *j > 0)
        .unwrap_or(8)
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panicked".into())
}

type Outcomes = BTreeMap<(Step, Fault), Result<String, String>>;

fn print_matrix(cells: &[Cell], outcomes: &Outcomes, took: Duration) {
    let width = 22;
    let mut grid = format!("{:<18}", "step \\ fault");
    for fault in FAULTS {
        grid += &format!("{:<width$}", fault.label());
    }
    grid.push('\n');
    for step in STEPS {
        grid += &format!("{:<18}", step.label());
        for fault in FAULTS {
            let cell = cells
                .iter()
                .find(|c| c.step == step && c.fault == fault)
                .unwrap();
            let mark = match (&cell.expect, outcomes.get(&(step, fault))) {
                (Expect::NotApplicable(why), _) => format!("n/a ({why})"),
                (_, None) => "(not run)".into(),
                (_, Some(Err(_))) => "BROKEN".into(),
                (Expect::RidesOut { .. }, Some(Ok(_))) => "rides out".into(),
                (Expect::Fails { .. }, Some(Ok(_))) => "fails, named".into(),
                (Expect::Killed { .. }, Some(Ok(_))) => "killed, rerun ok".into(),
            };
            grid += &format!("{mark:<width$}");
        }
        grid.push('\n');
    }
    let applicable = cells.iter().filter(|c| c.applicable()).count();
    let broken = outcomes.values().filter(|o| o.is_err()).count();
    eprintln!(
        "\nfault matrix: {} steps × {} faults = {} cells, {applicable} applicable, {} n/a; \
         {} run, {broken} broken, in {:.0?} ({} at a time)\n\n{grid}",
        STEPS.len(),
        FAULTS.len(),
        cells.len(),
        cells.len() - applicable,
        outcomes.len(),
        took,
        jobs()
    );
    for ((step, fault), outcome) in outcomes {
        match outcome {
            Ok(what) => eprintln!("  {} × {}: {what}", step.label(), fault.label()),
            Err(why) => eprintln!("  {} × {}: BROKEN: {why}", step.label(), fault.label()),
        }
    }
}

#[test]
fn every_step_rides_out_or_names_its_fault_and_a_rerun_converges() {
    support::cli(); // resolve the CLI once, before the threads
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cells = support::fault_cells::matrix();
    let mut queue: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.applicable() && selected(c))
        .collect();
    // Longest first, for the best packing of the bounded workers.
    queue.sort_by_key(|c| std::cmp::Reverse(c.weight()));
    let queue = Mutex::new(queue.into_iter());
    let outcomes: Mutex<Outcomes> = Mutex::new(BTreeMap::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs() {
            scope.spawn(|| {
                loop {
                    let Some(cell) = queue.lock().unwrap().next() else {
                        return;
                    };
                    let cell_started = Instant::now();
                    let sim = runtime.block_on(support::sim::start());
                    let outcome = catch_unwind(AssertUnwindSafe(|| run_cell(&sim, cell)))
                        .unwrap_or_else(|panic| Err(panic_text(panic.as_ref())));
                    let _ = runtime.block_on(sim.shutdown());
                    eprintln!(
                        "  done in {:.0?}: {} ({})",
                        cell_started.elapsed(),
                        cell.label(),
                        if outcome.is_ok() { "ok" } else { "BROKEN" }
                    );
                    outcomes
                        .lock()
                        .unwrap()
                        .insert((cell.step, cell.fault), outcome);
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().unwrap();
    print_matrix(&cells, &outcomes, started.elapsed());
    assert!(!outcomes.is_empty(), "no cell selected");
    // Each broken cell with the first line of why: a CI log keeps only the
    // end of the output, where the grid's reasons may be cut off.
    let broken: Vec<String> = outcomes
        .iter()
        .filter_map(|((s, f), o)| {
            let why = o.as_ref().err()?.lines().next().unwrap_or_default();
            let why: String = why.chars().take(300).collect();
            Some(format!("- {} × {}: {why}", s.label(), f.label()))
        })
        .collect();
    assert!(
        broken.is_empty(),
        "cells that broke their contract:\n{}",
        broken.join("\n")
    );
}
