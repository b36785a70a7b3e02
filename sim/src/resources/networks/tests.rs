//! Tests of networks: gateways and reserved addresses, free IPs, and the
//! checks of network ranges and subnets.

use super::*;
use crate::state::World;

fn world_with_network() -> (World, Id) {
    let mut world = World::default();
    let id = world
        .create_network(
            "net".into(),
            "10.0.0.0/16",
            vec![SubnetSpec {
                kind: "cloud".into(),
                ip_range: Some("10.0.1.0/24".into()),
                network_zone: "eu-central".into(),
            }],
            vec![RouteSpec {
                destination: "0.0.0.0/0".into(),
                gateway: "10.0.1.2".into(),
            }],
            Labels::new(),
            false,
            Timestamp::now(),
        )
        .unwrap();
    (world, id)
}

#[test]
fn gateway_is_the_first_host_of_the_network() {
    let (world, id) = world_with_network();
    let json = world.network(id).unwrap().to_api(&world);
    assert_eq!(json["subnets"][0]["gateway"], "10.0.0.1");
    assert_eq!(json["subnets"][0]["type"], "cloud");
    assert_eq!(json["routes"][0]["gateway"], "10.0.1.2");
}

#[test]
fn free_ips_skip_reserved_addresses() {
    let (world, id) = world_with_network();
    let network = world.network(id).unwrap();
    assert!(network.is_reserved("10.0.1.0".parse().unwrap()));
    assert!(network.is_reserved("10.0.1.255".parse().unwrap()));
    assert!(network.is_reserved("10.0.0.1".parse().unwrap()));
    assert_eq!(
        world.free_ip(network, "eu-central", None),
        Some("10.0.1.1".parse().unwrap())
    );
    assert_eq!(world.free_ip(network, "us-east", None), None);
}

#[test]
fn rejects_bad_ranges() {
    let mut world = World::default();
    for (range, why) in [
        ("8.8.0.0/16", "public"),
        ("10.0.0.7/16", "host bits"),
        ("10.0.0.0", "no prefix"),
    ] {
        let err = world
            .create_network(
                format!("n{why}"),
                range,
                vec![],
                vec![],
                Labels::new(),
                false,
                Timestamp::now(),
            )
            .unwrap_err();
        assert_eq!(err.code(), "invalid_input", "{why}");
    }
}

#[test]
fn subnets_must_fit_and_not_overlap() {
    let (mut world, id) = world_with_network();
    let now = Timestamp::now();
    let spec = |range: &str| SubnetSpec {
        kind: "cloud".into(),
        ip_range: Some(range.into()),
        network_zone: "eu-central".into(),
    };
    assert_eq!(
        world
            .add_subnet(id, spec("10.1.0.0/24"), now)
            .unwrap_err()
            .code(),
        "invalid_input"
    );
    assert_eq!(
        world
            .add_subnet(id, spec("10.0.1.0/25"), now)
            .unwrap_err()
            .code(),
        "invalid_input"
    );
    world.add_subnet(id, spec("10.0.2.0/24"), now).unwrap();
    // The network is busy with that subnet until its action ends.
    assert_eq!(
        world
            .add_subnet(id, spec("10.0.3.0/24"), now)
            .unwrap_err()
            .code(),
        "conflict"
    );
    world.advance(now.plus(std::time::Duration::from_secs(60)));
    let auto = SubnetSpec {
        kind: "cloud".into(),
        ip_range: None,
        network_zone: "eu-central".into(),
    };
    world.add_subnet(id, auto, now).unwrap();
    let ranges: Vec<String> = world.networks[&id]
        .subnets
        .iter()
        .map(|s| s.ip_range.to_string())
        .collect();
    assert_eq!(ranges, vec!["10.0.1.0/24", "10.0.2.0/24", "10.0.0.0/24"]);
}
