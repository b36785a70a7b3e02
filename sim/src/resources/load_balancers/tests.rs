//! Tests of load balancers: the address checks, the public interface,
//! targets, health and where the proxy sends a connection.

use std::net::Ipv4Addr;

use super::{Listening, LoadBalancerSpec, ServiceSpec, TargetSpec};
use crate::clock::Timestamp;
use crate::durations::{Durations, Profile};
use crate::ids::Id;
use crate::seed;
use crate::state::{World, WorldConfig};

fn world() -> (World, Timestamp, Id, Id) {
    let mut world = World::new(WorldConfig {
        durations: Durations::new(Profile::Fast),
        ..WorldConfig::default()
    });
    seed::system_images(&mut world);
    let now = Timestamp::from_millis(1_800_000_000_000);
    seed::hct_project(&mut world, now).unwrap();
    let network = *world.networks.keys().next().unwrap();
    let nat = *world.servers.keys().next().unwrap();
    (world, now, network, nat)
}

fn spec(name: &str) -> LoadBalancerSpec {
    LoadBalancerSpec {
        name: name.into(),
        load_balancer_type: "lb11".into(),
        location: Some("nbg1".into()),
        ..LoadBalancerSpec::default()
    }
}

fn tcp(port: i64) -> ServiceSpec {
    ServiceSpec {
        protocol: Some("tcp".into()),
        listen_port: Some(port),
        destination_port: Some(port),
        ..ServiceSpec::default()
    }
}

#[test]
fn addresses_are_checked_and_kept_from_servers() {
    let (mut world, now, network, _) = world();
    let (id, _) = world.create_load_balancer(spec("api"), now).unwrap();
    // Past the create_load_balancer action, which holds it.
    let now = now.plus(std::time::Duration::from_secs(1));
    world.advance(now);
    let err = world.set_load_balancer_public_interface(id, false, now);
    assert_eq!(
        err.unwrap_err().code(),
        "load_balancer_not_attached_to_network"
    );
    // The NAT box has 10.0.128.2; the gateway is reserved; 10.0.5.5 is in
    // no subnet.
    for (ip, code) in [
        ("10.0.128.2", "ip_not_available"),
        ("10.0.0.1", "ip_not_available"),
        ("10.0.5.5", "no_subnet_available"),
    ] {
        let err = world
            .attach_load_balancer(id, network, Some(ip.into()), None, now)
            .unwrap_err();
        assert_eq!(err.code(), code, "{ip}");
    }
    world
        .attach_load_balancer(id, network, Some("10.0.128.254".into()), None, now)
        .unwrap();
    let ip: Ipv4Addr = "10.0.128.254".parse().unwrap();
    assert!(world.ip_in_use(network, ip), "servers cannot take it");
    let network_ref = world.network(network).unwrap().clone();
    assert_ne!(world.free_ip(&network_ref, "eu-central", None), Some(ip));
}

#[test]
fn a_create_without_a_network_keeps_its_public_interface() {
    let (mut world, now, _, _) = world();
    let mut closed = spec("closed");
    closed.public_interface = Some(false);
    let err = world.create_load_balancer(closed, now).unwrap_err();
    assert_eq!(err.code(), "load_balancer_not_attached_to_network");
    let mut nowhere = spec("nowhere");
    nowhere.load_balancer_type = "lb31".into();
    nowhere.location = Some("sin".into());
    let err = world.create_load_balancer(nowhere, now).unwrap_err();
    assert_eq!(err.code(), "unsupported_location_for_load_balancer_type");
}

#[test]
fn connections_go_to_healthy_targets_only() {
    let (mut world, now, network, nat) = world();
    let mut with_network = spec("api");
    with_network.network = Some(network);
    with_network.services = vec![tcp(22)];
    with_network.targets = vec![TargetSpec {
        kind: "server".into(),
        server: Some(nat),
        use_private_ip: true,
        ..TargetSpec::default()
    }];
    let (id, _) = world.create_load_balancer(with_network, now).unwrap();
    let ip = world
        .load_balancer(id)
        .unwrap()
        .private_ip_in(network)
        .unwrap();

    let listening: Listening = [(nat, 22)].into();
    let route = world
        .load_balancer_route(network, ip, 22, &listening)
        .unwrap()
        .unwrap();
    assert_eq!((route.servers, route.destination_port), (vec![nat], 22));
    let view = world
        .load_balancer(id)
        .unwrap()
        .to_api(&world, Some(&listening));
    assert_eq!(view["targets"][0]["health_status"][0]["status"], "healthy");

    // Nothing listens: no healthy target.
    let route = world
        .load_balancer_route(network, ip, 22, &Listening::new())
        .unwrap()
        .unwrap();
    assert!(route.servers.is_empty());
    let view = world
        .load_balancer(id)
        .unwrap()
        .to_api(&world, Some(&Listening::new()));
    assert_eq!(
        view["targets"][0]["health_status"][0]["status"],
        "unhealthy"
    );
    // No service on that port; not a load balancer's address.
    assert!(
        world
            .load_balancer_route(network, ip, 23, &listening)
            .unwrap()
            .is_none()
    );
    let elsewhere: Ipv4Addr = "10.0.128.99".parse().unwrap();
    assert!(
        world
            .load_balancer_route(network, elsewhere, 22, &listening)
            .is_none()
    );
}

#[test]
fn load_balancers_are_saved_with_the_world() {
    let (mut world, now, network, _) = world();
    let mut with_network = spec("api");
    with_network.network = Some(network);
    with_network.services = vec![tcp(6443)];
    with_network.targets = vec![TargetSpec {
        kind: "label_selector".into(),
        selector: Some("pool=cp".into()),
        use_private_ip: true,
        ..TargetSpec::default()
    }];
    let (id, _) = world.create_load_balancer(with_network, now).unwrap();
    let saved = serde_json::to_string(&world).unwrap();
    let back: World = serde_json::from_str(&saved).unwrap();
    let lb = back.load_balancer(id).unwrap();
    assert_eq!(lb.services.len(), 1);
    assert_eq!(lb.targets, world.load_balancer(id).unwrap().targets);
    assert_eq!(lb.private_net, world.load_balancer(id).unwrap().private_net);
}
