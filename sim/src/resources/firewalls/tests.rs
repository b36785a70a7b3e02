//! Tests of firewall rules and of applying firewalls to servers.

use serde_json::json;

use super::{RuleSpec, Target};
use crate::clock::Timestamp;
use crate::durations::{Durations, Profile};
use crate::faults::ActionFailure;
use crate::resources::servers::ServerSpec;
use crate::seed;
use crate::state::{World, WorldConfig};

fn world() -> (World, Timestamp) {
    let mut world = World::new(WorldConfig {
        durations: Durations::new(Profile::Fast),
        ..WorldConfig::default()
    });
    seed::system_images(&mut world);
    (world, Timestamp::from_millis(1_800_000_000_000))
}

fn rule(direction: &str, protocol: &str, port: Option<&str>, ips: &[&str]) -> RuleSpec {
    let ips: Vec<String> = ips.iter().map(|s| s.to_string()).collect();
    RuleSpec {
        direction: direction.into(),
        protocol: protocol.into(),
        port: port.map(str::to_string),
        source_ips: if direction == "in" {
            ips.clone()
        } else {
            vec![]
        },
        destination_ips: if direction == "out" { ips } else { vec![] },
        description: None,
    }
}

fn field_names(err: crate::errors::ApiError) -> Vec<String> {
    err.details()["fields"]
        .as_array()
        .map(|fields| {
            fields
                .iter()
                .map(|f| f["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn rules_are_checked_and_ipv6_is_made_canonical() {
    let (mut world, now) = world();
    let good = [
        rule("in", "icmp", None, &["0.0.0.0/0", "2001:0db8:0000::/32"]),
        rule("in", "tcp", Some("1024-5000"), &["192.0.2.7/32"]),
        rule("out", "udp", Some("any"), &["::/0"]),
    ];
    let (id, actions) = world
        .create_firewall("fw".into(), Default::default(), &good, &[], now)
        .unwrap();
    assert_eq!(actions.len(), 1, "one set_firewall_rules action");
    let view = world.firewall(id).unwrap().to_api(&world);
    assert_eq!(
        view["rules"][0]["source_ips"],
        json!(["0.0.0.0/0", "2001:db8::/32"])
    );
    assert_eq!(view["rules"][1]["port"], json!("1024-5000"));
    assert_eq!(view["rules"][2]["port"], json!("any"), "kept as given");

    let bad = [
        rule("in", "tcp", None, &["0.0.0.0/0"]),
        rule("in", "icmp", Some("22"), &["10.0.0.1/8"]),
        rule("sideways", "tcp", Some("22"), &["0.0.0.0/0"]),
        rule("in", "udp", Some("70000"), &[]),
        rule("in", "tcp", Some("ANY"), &["0.0.0.0/0"]),
        rule("in", "tcp", Some("any-80"), &["0.0.0.0/0"]),
    ];
    let err = world
        .create_firewall("bad".into(), Default::default(), &bad, &[], now)
        .unwrap_err();
    assert_eq!(err.code(), "invalid_input");
    assert_eq!(
        field_names(err),
        [
            "rules[0].port",
            "rules[1].port",
            "rules[1].source_ips",
            "rules[2].direction",
            "rules[3].port",
            "rules[3].source_ips",
            "rules[4].port",
            "rules[5].port",
        ]
    );
    assert!(!world.firewalls.values().any(|f| f.name == "bad"));
}

#[test]
fn a_firewall_is_applied_to_public_servers_only_and_held_while_applied() {
    let (mut world, now) = world();
    let (fw, _) = world
        .create_firewall("fw".into(), Default::default(), &[], &[], now)
        .unwrap();
    let mut spec = ServerSpec::new("nat", "cx23", "debian-12");
    spec.firewalls = vec![fw];
    let nat = world.create_server(spec, now).unwrap();
    assert_eq!(world.firewalls_of(nat.server), [fw]);
    let view = world.server(nat.server).unwrap().to_api(&world, now);
    assert_eq!(
        view["public_net"]["firewalls"],
        json!([{"id": fw, "status": "applied"}])
    );

    let mut private = ServerSpec::new("private", "cx23", "debian-12");
    private.enable_ipv4 = false;
    private.enable_ipv6 = false;
    let private = world.create_server(private, now).unwrap().server;
    let err = world
        .apply_firewall(fw, &[Target::Server(private)], now)
        .unwrap_err();
    assert_eq!(err.code(), "private_net_only_server");
    let err = world
        .apply_firewall(fw, &[Target::Server(nat.server)], now)
        .unwrap_err();
    assert_eq!(err.code(), "firewall_already_applied");
    let err = world
        .apply_firewall(fw, &[Target::Server(4_242)], now)
        .unwrap_err();
    assert_eq!(
        (err.code(), err.status().as_u16()),
        ("firewall_resource_not_found", 404)
    );

    assert_eq!(
        world.delete_firewall(fw).unwrap_err().code(),
        "resource_in_use"
    );
    world
        .remove_firewall(fw, &[Target::Server(nat.server)], now)
        .unwrap();
    assert!(world.firewalls_of(nat.server).is_empty());
    let err = world
        .remove_firewall(fw, &[Target::Server(nat.server)], now)
        .unwrap_err();
    assert_eq!(err.code(), "firewall_resource_not_found");
    world.delete_firewall(fw).unwrap();
    assert!(world.firewalls.is_empty());
}

fn labelled_server(world: &mut World, name: &str, labels: &[(&str, &str)], now: Timestamp) -> i64 {
    let mut spec = ServerSpec::new(name, "cx23", "debian-12");
    spec.labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    world.create_server(spec, now).unwrap().server
}

#[test]
fn a_label_selector_covers_matching_public_servers_now_and_later() {
    let (mut world, now) = world();
    let web = labelled_server(&mut world, "web", &[("role", "web")], now);
    let db = labelled_server(&mut world, "db", &[("role", "db")], now);
    let selector = [Target::LabelSelector("role=web".into())];
    let (fw, actions) = world
        .create_firewall("fw".into(), Default::default(), &[], &selector, now)
        .unwrap();
    let action = world.action(actions[0]).unwrap();
    assert_eq!(action.command, "apply_firewall");
    assert_eq!(action.resources.len(), 2, "the firewall and server {web}");
    assert_eq!(world.firewalls_of(web), [fw]);
    assert!(world.firewalls_of(db).is_empty());

    // A server created later with matching labels is covered; one without a
    // public interface is not.
    let later = labelled_server(&mut world, "web-2", &[("role", "web")], now);
    let mut private = ServerSpec::new("web-private", "cx23", "debian-12");
    private.labels = [("role".to_string(), "web".to_string())].into();
    private.enable_ipv4 = false;
    private.enable_ipv6 = false;
    let private = world.create_server(private, now).unwrap().server;
    let view = world.firewall(fw).unwrap().to_api(&world);
    assert_eq!(
        view["applied_to"],
        json!([{
            "type": "label_selector",
            "label_selector": {"selector": "role=web"},
            "applied_to_resources": [
                {"type": "server", "server": {"id": web}},
                {"type": "server", "server": {"id": later}},
            ],
        }])
    );
    assert!(world.firewalls_of(private).is_empty());
    let server = world.server(later).unwrap().to_api(&world, now);
    assert_eq!(
        server["public_net"]["firewalls"],
        json!([{"id": fw, "status": "applied"}])
    );

    // Relabelled away, the server leaves the firewall.
    world
        .update_server(web, None, Some(Default::default()))
        .unwrap();
    assert!(world.firewalls_of(web).is_empty());

    let err = world.apply_firewall(fw, &selector, now).unwrap_err();
    assert_eq!(err.code(), "firewall_already_applied");
    let err = world
        .remove_firewall(fw, &[Target::Server(later)], now)
        .unwrap_err();
    assert_eq!(
        (err.code(), err.status().as_u16()),
        ("firewall_managed_by_label_selector", 422)
    );
    let err = world
        .remove_firewall(fw, &[Target::Server(db)], now)
        .unwrap_err();
    assert_eq!(err.code(), "firewall_resource_not_found");
    assert_eq!(
        world.delete_firewall(fw).unwrap_err().code(),
        "resource_in_use"
    );
    let actions = world.remove_firewall(fw, &selector, now).unwrap();
    assert_eq!(world.action(actions[0]).unwrap().command, "remove_firewall");
    assert!(world.firewalls_of(later).is_empty());
    let err = world.remove_firewall(fw, &selector, now).unwrap_err();
    assert_eq!(
        (err.code(), err.status().as_u16()),
        ("firewall_resource_not_found", 404)
    );
    world.delete_firewall(fw).unwrap();
}

#[test]
fn a_failed_apply_or_remove_of_a_selector_is_undone() {
    let (mut world, now) = world();
    let (fw, _) = world
        .create_firewall("fw".into(), Default::default(), &[], &[], now)
        .unwrap();
    let selector = [Target::LabelSelector("role=web".into())];
    let fail = |action: &str| ActionFailure {
        action: action.into(),
        count: Some(1),
        code: "action_failed".into(),
        message: None,
        server: None,
    };
    world.config.action_failures.push(fail("apply_firewall"));
    world.apply_firewall(fw, &selector, now).unwrap();
    assert_eq!(world.firewall(fw).unwrap().label_selectors, ["role=web"]);
    let later = now.plus(std::time::Duration::from_secs(600));
    world.advance(later);
    assert!(world.firewall(fw).unwrap().label_selectors.is_empty());

    world.apply_firewall(fw, &selector, later).unwrap();
    world.advance(later.plus(std::time::Duration::from_secs(600)));
    world.config.action_failures.push(fail("remove_firewall"));
    world.remove_firewall(fw, &selector, later).unwrap();
    assert!(world.firewall(fw).unwrap().label_selectors.is_empty());
    world.advance(later.plus(std::time::Duration::from_secs(1200)));
    assert_eq!(world.firewall(fw).unwrap().label_selectors, ["role=web"]);
}
