//! Tests of Primary IPs: the ones servers get, the ones made on their own,
//! assigning and unassigning, deleting.

use std::time::Duration;

use super::PrimaryIpSpec;
use crate::clock::Timestamp;
use crate::durations::{Durations, Profile};
use crate::resources::servers::{Power, ServerSpec};
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

fn spec(name: &str, location: &str) -> PrimaryIpSpec {
    PrimaryIpSpec {
        name: name.into(),
        kind: "ipv4".into(),
        assignee_type: None,
        assignee: None,
        location: Some(location.into()),
        datacenter: None,
        auto_delete: false,
        labels: Default::default(),
    }
}

#[test]
fn a_server_gets_primary_ips_that_go_with_it() {
    let (mut world, now) = world();
    let mut nat = ServerSpec::new("nat", "cx23", "debian-12");
    nat.location = Some("nbg1".into());
    let nat = world.create_server(nat, now).unwrap().server;
    let server = world.server(nat).unwrap();
    let v4 = server.public_ipv4.clone().unwrap();
    let v6 = server.public_ipv6.clone().unwrap();
    assert_eq!(v4.ip, "203.0.113.1");
    assert_eq!(v6.ip, "2001:db8:1::/64");
    let record = world.primary_ip(v4.id).unwrap();
    assert_eq!(record.assignee, Some(nat));
    assert!(record.auto_delete);
    assert_eq!(record.location, "nbg1");
    assert_eq!(record.name, format!("primary_ip-{}", v4.id));

    let mut private = ServerSpec::new("private", "cx23", "debian-12");
    private.enable_ipv4 = false;
    private.enable_ipv6 = false;
    world.create_server(private, now).unwrap();
    assert_eq!(world.primary_ips.len(), 2);

    world.remove_server(nat);
    assert!(
        world.primary_ips.is_empty(),
        "auto_delete IPs go with the server"
    );
}

#[test]
fn a_primary_ip_of_its_own_outlives_its_server() {
    let (mut world, now) = world();
    let (ip, action) = world
        .create_primary_ip(spec("egress", "nbg1"), now)
        .unwrap();
    assert!(action.is_none());
    let address = world.primary_ip(ip).unwrap().ip.clone();

    let mut wrong_place = ServerSpec::new("elsewhere", "cx23", "debian-12");
    wrong_place.location = Some("hel1".into());
    wrong_place.primary_ipv4 = Some(ip);
    let err = world.create_server(wrong_place, now).unwrap_err();
    assert_eq!(err.code(), "primary_ip_datacenter_mismatch");
    let mut as_v6 = ServerSpec::new("v6", "cx23", "debian-12");
    as_v6.location = Some("nbg1".into());
    as_v6.primary_ipv6 = Some(ip);
    let err = world.create_server(as_v6, now).unwrap_err();
    assert_eq!(err.code(), "primary_ip_version_mismatch");

    let mut nat = ServerSpec::new("nat", "cx23", "debian-12");
    nat.location = Some("nbg1".into());
    nat.primary_ipv4 = Some(ip);
    let nat = world.create_server(nat, now).unwrap().server;
    assert_eq!(
        world.server(nat).unwrap().public_ipv4.as_ref().unwrap().ip,
        address
    );
    let mut twice = ServerSpec::new("twice", "cx23", "debian-12");
    twice.location = Some("nbg1".into());
    twice.primary_ipv4 = Some(ip);
    assert_eq!(
        world.create_server(twice, now).unwrap_err().code(),
        "primary_ip_assigned"
    );

    assert_eq!(
        world.delete_primary_ip(ip).unwrap_err().code(),
        "must_be_unassigned"
    );
    let later = now.plus(Duration::from_secs(60));
    world.advance(later);
    assert_eq!(
        world.unassign_primary_ip(ip, later).unwrap_err().code(),
        "server_not_stopped"
    );
    world.power(nat, Power::Off, later).unwrap();
    let off = later.plus(Duration::from_secs(60));
    world.advance(off);
    world.unassign_primary_ip(ip, off).unwrap();
    assert!(world.server(nat).unwrap().public_ipv4.is_none());
    let again = off.plus(Duration::from_secs(60));
    world.advance(again);
    world.assign_primary_ip(ip, nat, "server", again).unwrap();
    assert_eq!(
        world
            .server(nat)
            .unwrap()
            .public_ipv4
            .as_ref()
            .map(|p| p.id),
        Some(ip)
    );

    world.remove_server(nat);
    assert_eq!(
        world.primary_ip(ip).unwrap().assignee,
        None,
        "it stays, unassigned"
    );
    world.delete_primary_ip(ip).unwrap();
}

#[test]
fn an_address_finds_its_primary_ip_and_an_ipv6_network_its_address() {
    let (mut world, now) = world();
    let (v4, _) = world.create_primary_ip(spec("v4", "nbg1"), now).unwrap();
    let mut v6 = spec("v6", "nbg1");
    v6.kind = "ipv6".into();
    let (v6, _) = world.create_primary_ip(v6, now).unwrap();
    let v4 = world.primary_ip(v4).unwrap();
    let v6 = world.primary_ip(v6).unwrap();
    assert_eq!(v6.ip, "2001:db8:1::/64");

    assert!(v4.has_address(&v4.ip.clone()));
    assert!(!v4.has_address("203.0.113.99"));
    for found in ["2001:db8:1::", "2001:DB8:1:0::", "2001:db8:1::/64"] {
        assert!(v6.has_address(found), "{found}");
    }
    for other in ["2001:db8:2::", "2001:db8:1::/48", "v6", ""] {
        assert!(!v6.has_address(other), "{other}");
    }
}
