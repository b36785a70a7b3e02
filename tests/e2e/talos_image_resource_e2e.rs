//! `resource "hct_talos_image"` through a real Terraform against hct-sim:
//! a build from scratch (rescue, SSH through the sim's proxy, write,
//! snapshot), adoption by a second configuration, the data source finding
//! the result, destroy and keep_on_destroy, an arm64 build on cax11, the
//! sweep of expired leftovers, and failures at each step, which must leave
//! no temporary server or key behind and say what went wrong.
//!
//! Each scenario has its own emulator; the slow ones run side by side.

use crate::support;

use std::time::Duration;

use hct_sim::resources::servers::ServerSpec;
use hct_sim::{RescueFault, SimHandle};
use serde_json::json;
use support::Workspace;

const QEMU: &str = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";

fn config(body: &str) -> String {
    format!(
        r#"
terraform {{
  required_providers {{
    hct = {{ source = "registry.hct.internal/hct/hct" }}
  }}
}}
provider "hct" {{
  poll_interval = "50ms"
}}
{body}
"#
    )
}

fn image(name: &str, arch: &str, extra: &str) -> String {
    format!(
        r#"
resource "hct_talos_image" "{name}" {{
  talos_version = "v1.12.6"
  architecture  = "{arch}"
  extensions    = ["siderolabs/qemu-guest-agent"]
  location      = "nbg1"
  labels        = {{ team = "platform" }}
  {extra}
}}
output "{name}_id" {{ value = hct_talos_image.{name}.id }}
output "{name}_schematic" {{ value = hct_talos_image.{name}.schematic_id }}
output "{name}_installer" {{ value = hct_talos_image.{name}.installer_image }}
"#
    )
}

fn workspace(sim: &SimHandle, body: &str) -> Workspace {
    let mut ws = Workspace::dev_override(&[("main.tf", &config(body))]);
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token())
        .env("HCT_TALOS_PROXY", sim.proxy_url())
        .env("TF_LOG_PROVIDER", "info");
    ws
}

/// Temporary servers and SSH keys in the project.
fn temporaries(sim: &SimHandle) -> (usize, usize) {
    sim.inspect(|w| {
        let temporary = |labels: &std::collections::BTreeMap<String, String>| {
            labels.get("hct-temporary").map(String::as_str) == Some("talos-image-build")
        };
        (
            w.servers.values().filter(|s| temporary(&s.labels)).count(),
            w.ssh_keys.values().filter(|k| temporary(&k.labels)).count(),
        )
    })
}

fn servers_created(sim: &SimHandle) -> u64 {
    sim.request_counts()
        .get("POST /servers")
        .copied()
        .unwrap_or_default()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Build, adopt, find, destroy, keep.
#[test]
fn builds_then_adopts_finds_and_destroys() {
    let rt = runtime();
    let sim = rt.block_on(support::sim::start());
    let ws = workspace(&sim, &image("this", "amd64", ""));
    let out = ws
        .terraform(&["apply", "-auto-approve"])
        .expect_success("build");
    assert!(
        out.stderr.contains("waiting for SSH on 203.0.113."),
        "no SSH progress in the log:\n{out}"
    );
    let outputs = ws.outputs();
    let id: i64 = outputs["this_id"]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(outputs["this_schematic"]["value"], json!(QEMU));
    assert_eq!(
        outputs["this_installer"]["value"],
        json!(format!("factory.talos.dev/hcloud-installer/{QEMU}:v1.12.6"))
    );
    let snapshot = sim.inspect(|w| w.images[&id].clone());
    assert_eq!(snapshot.status.as_str(), "available");
    assert_eq!(snapshot.architecture.as_str(), "x86");
    for (key, value) in [
        ("os", "talos"),
        ("type", "infra"),
        ("version", "v1.12.6"),
        ("arch", "amd64"),
        ("schematic", &QEMU[..32]),
        ("team", "platform"),
    ] {
        assert_eq!(
            snapshot.labels.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    assert!(
        snapshot.description.contains(QEMU),
        "{}",
        snapshot.description
    );
    let content = snapshot
        .content
        .expect("the snapshot holds the written image");
    assert_eq!(
        (
            content.version.as_str(),
            content.arch.as_str(),
            content.schematic.as_str()
        ),
        ("v1.12.6", "amd64", QEMU)
    );
    assert_eq!(content.server_type, "cx23", "the default x86 builder");
    // A server made from the snapshot boots the Talos its disk holds (the
    // image the builder wrote), not what the labels say.
    let (release, schematic) = sim.modify(|w| {
        let mut spec = ServerSpec::new("from-the-snapshot", "cx23", &id.to_string());
        spec.start_after_create = false;
        spec.enable_ipv4 = false;
        spec.enable_ipv6 = false;
        let now = hct_sim::clock::Timestamp::now();
        let server = w.create_server(spec, now).unwrap().server;
        let talos = w.servers[&server].talos.clone().expect("a Talos server");
        w.servers.remove(&server);
        (talos.version, talos.schematic)
    });
    assert_eq!(
        (release.as_str(), schematic.as_deref()),
        ("v1.12.6", Some(QEMU))
    );
    let builder = snapshot.created_from.expect("made from the builder");
    assert!(
        !sim.inspect(|w| w.servers.contains_key(&builder.id)),
        "the builder server is gone"
    );
    assert_eq!(temporaries(&sim), (0, 0), "temporary server or key left");
    let built_with = servers_created(&sim);
    assert_eq!(built_with, 1);

    // Nothing to do on a second plan.
    let again = ws
        .terraform(&["plan", "-detailed-exitcode"])
        .expect_success("plan after apply");
    assert!(again.stdout.contains("No changes"), "{again}");

    // A fresh state adopts the snapshot: no server is created.
    let adopted_ws = workspace(
        &sim,
        &format!(
            "{}\n{}",
            image("adopted", "amd64", "keep_on_destroy = true"),
            r#"
data "hct_talos_image" "found" {
  talos_version = "v1.12.6"
  architecture  = "amd64"
  schematic_id  = hct_talos_image.adopted.schematic_id
  depends_on    = [hct_talos_image.adopted]
}
output "found" { value = data.hct_talos_image.found.id }
"#
        ),
    );
    adopted_ws
        .terraform(&["apply", "-auto-approve"])
        .expect_success("adopt");
    let adopted = adopted_ws.outputs();
    assert_eq!(adopted["adopted_id"]["value"], json!(id.to_string()));
    assert_eq!(adopted["found"]["value"], json!(id.to_string()));
    assert_eq!(
        servers_created(&sim),
        built_with,
        "adoption created a server"
    );

    // keep_on_destroy only forgets the snapshot…
    adopted_ws
        .terraform(&["destroy", "-auto-approve"])
        .expect_success("destroy with keep_on_destroy");
    assert!(sim.inspect(|w| w.images.contains_key(&id)));
    // …destroy deletes it.
    ws.terraform(&["destroy", "-auto-approve"])
        .expect_success("destroy");
    assert!(!sim.inspect(|w| w.images.contains_key(&id)));
    rt.block_on(sim.shutdown()).unwrap();
}

/// Ctrl-C while the build waits for the rescue system's SSH: Terraform
/// stops promptly and the temporary server and key are gone.
#[test]
fn ctrl_c_during_a_build_leaves_no_temporaries() {
    let rt = runtime();
    let sim = rt.block_on(support::sim::start());
    sim.slow_rescue_ssh(Duration::from_secs(600));
    let ws = workspace(&sim, &image("this", "amd64", ""));
    let mut apply = ws
        .command(&["apply", "-auto-approve", "-no-color"])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while temporaries(&sim).0 == 0 {
        assert!(std::time::Instant::now() < deadline, "no builder appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    std::process::Command::new("kill")
        .args(["-INT", &apply.id().to_string()])
        .status()
        .unwrap();
    let stopped = std::time::Instant::now();
    assert!(!apply.wait().unwrap().success());
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "took {:?} to stop",
        stopped.elapsed()
    );
    assert_eq!(temporaries(&sim), (0, 0), "temporary server or key left");
    rt.block_on(sim.shutdown()).unwrap();
}

/// An existing snapshot imported by id plans no rebuild.
#[test]
fn imports_a_snapshot_by_id() {
    let rt = runtime();
    let sim = rt.block_on(support::sim::start());
    let seeded = support::sim::seeded_talos_image(&sim, "v1.12.6", "amd64");
    let body = r#"
resource "hct_talos_image" "this" {
  talos_version = "v1.12.6"
  architecture  = "amd64"
  location      = "nbg1"
}
"#;
    let ws = workspace(&sim, body);
    ws.terraform(&["import", "hct_talos_image.this", &seeded.to_string()])
        .expect_success("import");
    let plan = ws.terraform(&["plan", "-detailed-exitcode"]);
    assert!(
        matches!(plan.status.code(), Some(0) | Some(2)),
        "plan after import failed\n{plan}"
    );
    assert!(
        !plan.stdout.contains("must be replaced"),
        "an imported snapshot must not be rebuilt\n{plan}"
    );
    ws.terraform(&["apply", "-auto-approve"])
        .expect_success("apply after import");
    assert_eq!(
        servers_created(&sim),
        0,
        "no builder for an imported snapshot"
    );
    rt.block_on(sim.shutdown()).unwrap();
}

/// What one failing build left and said.
struct Failure {
    name: &'static str,
    output: String,
    temporaries: (usize, usize),
    snapshots: usize,
}

fn failing_build(name: &'static str, prepare: impl FnOnce(&SimHandle), timeouts: &str) -> Failure {
    let rt = runtime();
    let sim = rt.block_on(support::sim::start());
    let before = sim.inspect(|w| w.images.len());
    prepare(&sim);
    let ws = workspace(&sim, &image("this", "amd64", timeouts));
    let out = ws
        .terraform(&["apply", "-auto-approve"])
        .expect_failure(name);
    let failure = Failure {
        name,
        output: out.to_string(),
        temporaries: temporaries(&sim),
        snapshots: sim.inspect(|w| w.images.len()) - before,
    };
    rt.block_on(sim.shutdown()).unwrap();
    failure
}

/// An arm64 build on cax11 that also sweeps expired leftovers (and only
/// those); and a failure at each step of a build.
#[test]
fn arm_builds_sweeps_leftovers_and_failures_clean_up() {
    std::thread::scope(|scope| {
        let arm = scope.spawn(arm64_build_sweeps_expired_leftovers);
        let failures = [
            scope.spawn(|| {
                failing_build(
                    "SSH never comes up",
                    |sim| sim.slow_rescue_ssh(Duration::from_secs(3600)),
                    "timeouts { create = \"6s\" }",
                )
            }),
            scope.spawn(|| failing_build("download fails", |sim| sim.fail_next_downloads(1), "")),
            scope.spawn(|| {
                failing_build(
                    "power-on fails",
                    |sim| sim.fail_next_actions("start_server", 1),
                    "",
                )
            }),
            scope.spawn(|| {
                failing_build(
                    "snapshot fails",
                    |sim| sim.fail_next_actions("create_image", 1),
                    "",
                )
            }),
        ];
        let expected = [
            "SSH to the rescue system timed out",
            "curl: (22)",
            "powering on the builder failed",
            "creating the snapshot failed",
        ];
        for (handle, phrase) in failures.into_iter().zip(expected) {
            let failure = handle.join().unwrap();
            assert!(
                failure.output.contains(phrase),
                "{}: no {phrase:?} in\n{}",
                failure.name,
                failure.output
            );
            assert_eq!(
                failure.temporaries,
                (0, 0),
                "{}: temporaries left\n{}",
                failure.name,
                failure.output
            );
            assert_eq!(
                failure.snapshots, 0,
                "{}: a snapshot was left\n{}",
                failure.name, failure.output
            );
            assert!(
                !failure.output.contains("BEGIN OPENSSH PRIVATE KEY"),
                "{}",
                failure.name
            );
        }
        arm.join().unwrap();
    });
}

fn arm64_build_sweeps_expired_leftovers() {
    let rt = runtime();
    let sim = rt.block_on(support::sim::start());
    // Leftovers of an earlier build that died (expired) and of one running
    // right now elsewhere (not expired).
    let plant = |build: &str, expires: u64| {
        let labels = format!(
            r#"{{"hct-temporary": "talos-image-build", "hct-build": "{build}", "hct-expires": "{expires}"}}"#
        );
        sim.modify(|w| {
            let labels: std::collections::BTreeMap<String, String> =
                serde_json::from_str(&labels).unwrap();
            let mut spec = hct_sim::resources::servers::ServerSpec::new(
                &format!("hct-talos-build-{build}"),
                "cx23",
                "ubuntu-24.04",
            );
            spec.labels = labels;
            w.create_server(spec, hct_sim::clock::Timestamp::now())
                .unwrap()
                .server
        })
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let dead = plant("deadbeef0001", now - 60);
    let running = plant("c0ffee000002", now + 3600);
    std::thread::sleep(Duration::from_millis(300)); // their create actions finish

    let ws = workspace(&sim, &image("arm", "arm64", ""));
    ws.terraform(&["apply", "-auto-approve"])
        .expect_success("arm64 build");
    let id: i64 = ws.outputs()["arm_id"]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let snapshot = sim.inspect(|w| w.images[&id].clone());
    assert_eq!(snapshot.architecture.as_str(), "arm");
    assert_eq!(snapshot.labels["arch"], "arm64");
    let content = snapshot.content.unwrap();
    assert_eq!(content.arch, "arm64");
    assert_eq!(content.server_type, "cax11", "the default arm builder");
    let builder = snapshot.created_from.unwrap();
    assert!(builder.name.starts_with("hct-talos-build-"));
    assert!(
        !sim.inspect(|w| w.servers.contains_key(&dead)),
        "the expired leftover was not swept"
    );
    assert!(
        sim.inspect(|w| w.servers.contains_key(&running)),
        "a running build's server was swept"
    );
    // The one server left that is temporary is the other build's.
    assert_eq!(temporaries(&sim), (1, 0));
    rt.block_on(sim.shutdown()).unwrap();
}

#[test]
fn rescue_fault_json_is_documented_shape() {
    let fault: RescueFault =
        serde_json::from_str(r#"{"rescue": "download_fails", "count": 1}"#).unwrap();
    assert!(matches!(
        fault,
        RescueFault::DownloadFails { count: Some(1), .. }
    ));
}
