//! Tests of the server requests, of what their actions do, and of loading
//! saved servers.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::durations::{Durations, Profile};
use crate::events::SimEvent;
use crate::resources::images::ImageStatus;
use crate::resources::networks::{NETWORK_SERVER_LIMIT, SubnetSpec};
use crate::seed;
use crate::state::{World, WorldConfig};
use crate::talos::node::{Mode, Phase};

fn world() -> (World, Timestamp) {
    let mut world = World::new(WorldConfig {
        durations: Durations::new(Profile::Fast),
        ..WorldConfig::default()
    });
    seed::system_images(&mut world);
    (world, Timestamp::from_millis(1_800_000_000_000))
}

fn later(now: Timestamp) -> Timestamp {
    now.plus(Duration::from_secs(60))
}

fn network(world: &mut World, range: &str, subnet: &str, now: Timestamp) -> Id {
    world
        .create_network(
            format!("net-{range}"),
            range,
            vec![SubnetSpec {
                kind: "cloud".into(),
                ip_range: Some(subnet.into()),
                network_zone: "eu-central".into(),
            }],
            vec![],
            Labels::new(),
            false,
            now,
        )
        .unwrap()
}

fn private_spec(name: &str) -> ServerSpec {
    let mut spec = ServerSpec::new(name, "cx23", "debian-12");
    spec.start_after_create = false;
    spec.enable_ipv4 = false;
    spec.enable_ipv6 = false;
    spec
}

#[test]
fn private_only_server_lifecycle() {
    let (mut w, now) = world();
    let net = network(&mut w, "10.0.0.0/16", "10.0.1.0/24", now);
    let created = w.create_server(private_spec("cp-1"), now).unwrap();
    assert!(created.next_actions.is_empty());
    assert!(created.root_password.is_some());
    let id = created.server;
    let json = w.server(id).unwrap().to_api(&w, now);
    assert!(json["public_net"]["ipv4"].is_null() && json["public_net"]["ipv6"].is_null());
    assert_eq!(json["status"], "initializing");
    assert_eq!(json["locked"], true);

    // Locked while create_server runs.
    let err = w.power(id, Power::On, now).unwrap_err();
    assert_eq!((err.code(), err.status().as_u16()), ("locked", 423));
    let attach = Attachment {
        ip: Some("10.0.1.10".into()),
        ..Attachment::default()
    };
    assert_eq!(
        w.attach_to_network(id, net, attach.clone(), now)
            .unwrap_err()
            .code(),
        "locked"
    );

    let now = later(now);
    w.advance(now);
    assert_eq!(w.server(id).unwrap().status, ServerStatus::Off);
    w.attach_to_network(id, net, attach, now).unwrap();
    let now = later(now);
    w.advance(now);
    w.power(id, Power::On, now).unwrap();
    assert_eq!(w.server(id).unwrap().status, ServerStatus::Starting);
    let now = later(now);
    w.advance(now);
    let server = w.server(id).unwrap();
    assert_eq!(server.status, ServerStatus::Running);
    assert_eq!(server.private_net[0].ip.to_string(), "10.0.1.10");
    assert_eq!(w.network_members(net), vec![id]);
}

#[test]
fn start_after_create_runs_a_follow_up_action() {
    let (mut w, now) = world();
    let mut spec = ServerSpec::new("web", "cax11", "debian-12");
    spec.ssh_keys = vec![];
    let created = w.create_server(spec, now).unwrap();
    assert_eq!(created.next_actions.len(), 1);
    let start = &w.actions[&created.next_actions[0]];
    let create = &w.actions[&created.action];
    assert_eq!(start.command, "start_server");
    assert!(start.finishes_at > create.finishes_at);
    w.advance(later(now));
    assert_eq!(
        w.server(created.server).unwrap().status,
        ServerStatus::Running
    );
    // The arm image was chosen for the arm server type.
    let image = w.server(created.server).unwrap().image.unwrap();
    assert_eq!(
        w.image(image).unwrap().architecture,
        catalog::Architecture::Arm
    );
}

#[test]
fn user_data_is_limited_to_32_kib() {
    let (mut w, now) = world();
    let mut spec = private_spec("big");
    spec.user_data = Some("x".repeat(USER_DATA_LIMIT));
    w.create_server(spec.clone(), now).unwrap();
    spec.name = "bigger".into();
    spec.user_data = Some("x".repeat(USER_DATA_LIMIT + 1));
    let err = w.create_server(spec, now).unwrap_err();
    assert_eq!(err.code(), "invalid_input");
    assert_eq!(
        err.envelope()["error"]["details"]["fields"][0]["name"],
        "user_data"
    );
}

#[test]
fn spread_groups_take_ten_servers() {
    let (mut w, now) = world();
    let group = w
        .create_placement_group("spread".into(), "spread", Labels::new(), now)
        .unwrap();
    for i in 0..10 {
        let mut spec = private_spec(&format!("s{i}"));
        spec.placement_group = Some(group);
        w.create_server(spec, now).unwrap();
    }
    let mut spec = private_spec("s10");
    spec.placement_group = Some(group);
    let err = w.create_server(spec, now).unwrap_err();
    assert_eq!(err.code(), "placement_group_member_limit_reached");
    assert!(!w.servers.values().any(|s| s.name == "s10"));
    // Room again once a member is gone.
    let member = w.placement_group_members(group)[0];
    let now = later(now);
    w.advance(now);
    w.delete_server(member, now).unwrap();
    w.advance(later(now));
    assert_eq!(w.placement_group_members(group).len(), 9);
}

#[test]
fn networks_take_a_hundred_servers() {
    let (mut w, now) = world();
    let net = network(&mut w, "10.0.0.0/16", "10.0.0.0/22", now);
    for i in 0..NETWORK_SERVER_LIMIT {
        let mut spec = private_spec(&format!("n{i}"));
        spec.networks = vec![net];
        w.create_server(spec, now).unwrap();
    }
    assert_eq!(w.network_members(net).len(), 100);
    let mut spec = private_spec("n100");
    spec.networks = vec![net];
    assert_eq!(
        w.create_server(spec, now).unwrap_err().code(),
        "resource_limit_exceeded"
    );
    let loner = w.create_server(private_spec("loner"), now).unwrap().server;
    let now = later(now);
    w.advance(now);
    let err = w
        .attach_to_network(loner, net, Attachment::default(), now)
        .unwrap_err();
    assert_eq!(err.code(), "resource_limit_exceeded");
}

#[test]
fn attachment_errors() {
    let (mut w, now) = world();
    let net = network(&mut w, "10.0.0.0/16", "10.0.1.0/24", now);
    let a = w.create_server(private_spec("a"), now).unwrap().server;
    let b = w.create_server(private_spec("b"), now).unwrap().server;
    let mut us = private_spec("us");
    us.location = Some("ash".into());
    us.server_type = "cpx11".into();
    let c = w.create_server(us, now).unwrap().server;
    let now = later(now);
    w.advance(now);
    let at = |ip: &str| Attachment {
        ip: Some(ip.into()),
        ..Attachment::default()
    };
    w.attach_to_network(a, net, at("10.0.1.5"), now).unwrap();
    let now = later(now);
    w.advance(now);
    let code = |w: &mut World, server, attachment| {
        w.attach_to_network(server, net, attachment, now)
            .unwrap_err()
            .code()
            .to_string()
    };
    assert_eq!(code(&mut w, a, at("10.0.1.6")), "server_already_attached");
    assert_eq!(code(&mut w, b, at("10.0.1.5")), "ip_not_available");
    assert_eq!(code(&mut w, b, at("10.0.1.255")), "ip_not_available");
    assert_eq!(code(&mut w, b, at("10.0.2.5")), "no_subnet_available");
    assert_eq!(code(&mut w, b, at("192.168.0.1")), "invalid_input");
    // The only subnet is in eu-central; an Ashburn server finds none.
    assert_eq!(
        code(&mut w, c, Attachment::default()),
        "no_subnet_available"
    );
    let mut aliased = at("10.0.1.7");
    aliased.alias_ips = vec!["10.0.1.5".into()];
    assert_eq!(code(&mut w, b, aliased), "ip_not_available");
}

#[test]
fn snapshots_lock_the_server_and_record_their_origin() {
    let (mut w, now) = world();
    let id = w.create_server(private_spec("golden"), now).unwrap().server;
    let now = later(now);
    w.advance(now);
    let labels: Labels = [("os".to_string(), "talos".to_string())].into();
    let (image, _) = w
        .create_image(id, None, Some("golden".into()), labels, now)
        .unwrap();
    assert_eq!(w.image(image).unwrap().status, ImageStatus::Creating);
    assert_eq!(w.delete_server(id, now).unwrap_err().code(), "locked");
    assert_eq!(w.delete_image(image).unwrap_err().code(), "locked");
    w.advance(later(now));
    let snapshot = w.image(image).unwrap();
    assert_eq!(snapshot.status, ImageStatus::Available);
    assert_eq!(snapshot.created_from.as_ref().map(|c| c.id), Some(id));
    assert_eq!(snapshot.disk_size, 40.0);
    assert!(snapshot.image_size.is_some_and(|s| s > 0.0));
}

/// The seeded Talos snapshot of `version` for x86.
fn seeded_talos(w: &World, version: &str) -> Id {
    w.images
        .values()
        .find(|i| {
            i.content.as_ref().map(|d| d.version.as_str()) == Some(version)
                && i.architecture == catalog::Architecture::X86
        })
        .map(|i| i.id)
        .unwrap()
}

fn talos_labels(version: &str) -> Labels {
    [("os", "talos"), ("version", version), ("arch", "amd64")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_server_boots_the_release_its_snapshot_disk_holds_not_its_labels() {
    let (mut w, now) = world();
    seed::hct_project(&mut w, now).unwrap();
    let mut spec = private_spec("old");
    spec.image = seeded_talos(&w, "v1.11.3").to_string();
    let old = w.create_server(spec, now).unwrap().server;
    assert_eq!(
        w.server(old)
            .unwrap()
            .disk
            .as_ref()
            .map(|d| d.version.as_str()),
        Some("v1.11.3"),
        "the disk holds what the seeded snapshot held"
    );
    let now = later(now);
    w.advance(now);
    // Labels that lie: they claim v1.12.6.
    let (lying, _) = w
        .create_image(old, None, None, talos_labels("v1.12.6"), now)
        .unwrap();
    let now = later(now);
    w.advance(now);
    let held = w.image(lying).unwrap().content.clone().unwrap();
    assert_eq!(
        (held.version.as_str(), held.arch.as_str()),
        ("v1.11.3", "amd64")
    );
    assert_eq!(held.schematic, seed::TALOS_SCHEMATIC);

    let mut spec = private_spec("from-lying-snapshot");
    spec.image = lying.to_string();
    let id = w.create_server(spec, now).unwrap().server;
    assert_eq!(
        w.server(id).unwrap().talos.as_ref().unwrap().version,
        "v1.11.3"
    );

    // Labels alone make no Talos disk: a Debian server's snapshot stays Debian.
    let debian = w.create_server(private_spec("debian"), now).unwrap().server;
    let now = later(now);
    w.advance(now);
    let (fake, _) = w
        .create_image(debian, None, None, talos_labels("v1.12.6"), now)
        .unwrap();
    w.advance(later(now));
    assert!(w.image(fake).unwrap().content.is_none());
    let mut spec = private_spec("not-talos");
    spec.image = fake.to_string();
    let id = w.create_server(spec, now).unwrap().server;
    assert!(w.server(id).unwrap().talos.is_none());
}

#[test]
fn a_rescue_written_disk_and_an_upgrade_are_what_the_snapshot_holds() {
    let (mut w, now) = world();
    seed::hct_project(&mut w, now).unwrap();
    let builder = w
        .create_server(private_spec("builder"), now)
        .unwrap()
        .server;
    let schematic = "ab".repeat(32);
    w.server_mut(builder).unwrap().disk = Some(crate::rescue::DiskImage {
        image_url: format!(
            "https://factory.talos.dev/image/{schematic}/v1.13.9/hcloud-amd64.raw.xz"
        ),
        version: "v1.13.9".into(),
        arch: "amd64".into(),
        schematic: schematic.clone(),
        server_type: "cx23".into(),
        written_at: now,
    });
    let now = later(now);
    w.advance(now);
    let (built, _) = w
        .create_image(builder, None, None, talos_labels("v1.11.3"), now)
        .unwrap();
    let now = later(now);
    w.advance(now);
    let mut spec = private_spec("node");
    spec.image = built.to_string();
    let node = w.create_server(spec, now).unwrap().server;
    let talos = w.server(node).unwrap().talos.clone().unwrap();
    assert_eq!(talos.version, "v1.13.9");
    assert_eq!(talos.schematic.as_deref(), Some(schematic.as_str()));

    // After an in-place upgrade the disk holds the new release.
    w.server_mut(node).unwrap().talos.as_mut().unwrap().version = "v1.13.10".into();
    let now = later(now);
    w.advance(now);
    let (upgraded, _) = w
        .create_image(node, None, None, Labels::new(), now)
        .unwrap();
    w.advance(later(now));
    let held = w.image(upgraded).unwrap().content.clone().unwrap();
    assert_eq!(
        (held.version.as_str(), held.schematic.as_str()),
        ("v1.13.10", schematic.as_str())
    );
}

#[test]
fn failed_snapshot_leaves_no_image() {
    let (mut w, now) = world();
    w.config
        .action_failures
        .push(crate::faults::ActionFailure::new("create_image", Some(1)));
    let id = w.create_server(private_spec("doomed"), now).unwrap().server;
    let now = later(now);
    w.advance(now);
    let (image, action) = w.create_image(id, None, None, Labels::new(), now).unwrap();
    w.advance(later(now));
    let action = &w.actions[&action];
    assert_eq!(action.status, crate::actions::ActionStatus::Error);
    assert_eq!(
        action.error.as_ref().map(|e| e.code.as_str()),
        Some("action_failed")
    );
    assert!(w.image(image).is_err());
    assert!(w.config.action_failures.is_empty());
}

#[test]
fn talos_slot_counts_boots_from_disk_only() {
    let (mut w, now) = world();
    seed::hct_project(&mut w, now).unwrap();
    let talos = w
        .images
        .values()
        .find(|i| {
            i.labels.get("version").map(String::as_str) == Some("v1.12.6")
                && i.architecture == catalog::Architecture::X86
        })
        .map(|i| i.id)
        .unwrap();
    let mut spec = private_spec("talos-1");
    spec.image = talos.to_string();
    let id = w.create_server(spec, now).unwrap().server;
    let now = later(now);
    w.advance(now);
    w.drain_events();
    w.power(id, Power::On, now).unwrap();
    let now = later(now);
    w.advance(now);
    let node = w.server(id).unwrap().talos.clone().unwrap();
    assert_eq!((node.version.as_str(), node.boots), ("v1.12.6", 1));
    assert_eq!(node.schematic.as_deref(), Some(seed::TALOS_SCHEMATIC));
    assert!(w.drain_events().iter().any(|e| matches!(
        e,
        SimEvent::ServerBooted { server, into: BootTarget::Disk, talos: Some(_) } if *server == id
    )));
    w.enable_rescue(id, Some("linux64"), &[], now).unwrap();
    let now = later(now);
    w.advance(now);
    w.power(id, Power::Reset, now).unwrap();
    w.advance(later(now));
    let server = w.server(id).unwrap();
    assert_eq!(server.boot, Some(BootTarget::Rescue));
    assert!(!server.rescue_enabled);
    assert_eq!(server.talos.as_ref().map(|t| t.boots), Some(1));
}

#[test]
fn type_changes_need_a_stopped_server() {
    let (mut w, now) = world();
    let mut spec = ServerSpec::new("grow", "cx23", "debian-12");
    spec.location = Some("fsn1".into());
    let id = w.create_server(spec, now).unwrap().server;
    let now = later(now);
    w.advance(now);
    assert_eq!(
        w.change_type(id, "cx33", true, now).unwrap_err().code(),
        "server_not_stopped"
    );
    w.power(id, Power::Off, now).unwrap();
    let now = later(now);
    w.advance(now);
    assert_eq!(
        w.change_type(id, "cax21", false, now).unwrap_err().code(),
        "invalid_server_type"
    );
    w.change_type(id, "cx33", true, now).unwrap();
    w.advance(later(now));
    let server = w.server(id).unwrap();
    assert_eq!(
        (server.server_type.as_str(), server.primary_disk_size),
        ("cx33", 80)
    );
    assert_eq!(server.status, ServerStatus::Running);
}

#[test]
fn names_are_hostnames_and_unique() {
    let (mut w, now) = world();
    w.create_server(private_spec("a"), now).unwrap();
    assert_eq!(
        w.create_server(private_spec("a"), now).unwrap_err().code(),
        "uniqueness_error"
    );
    assert_eq!(
        w.create_server(private_spec("not_a host"), now)
            .unwrap_err()
            .code(),
        "invalid_input"
    );
    assert!(is_hostname("cp-1.cluster.example"));
    assert!(!is_hostname("-cp"));
}

#[test]
fn slots_saved_before_talos_was_emulated_still_load() {
    let saved = json!({
        "image": 300000001, "version": "v1.12.6", "arch": "amd64", "schematic": null,
        "boots": 2, "last_booted": null,
    });
    let node: TalosNode = serde_json::from_value(saved).unwrap();
    assert_eq!(node.node.phase, Phase::Off);
    assert_eq!(node.node.summary.mode, Mode::Maintenance);
    let shown = serde_json::to_value(&node).unwrap();
    assert_eq!(shown["phase"], "off");
    assert_eq!(shown["apid"], "down");
}
