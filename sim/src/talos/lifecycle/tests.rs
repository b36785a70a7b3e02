//! Tests of how nodes move on with time: boots with and without a config,
//! power cycles, slow boots, and clusters forming, on a lab of emulated
//! nodes.

use std::net::Ipv4Addr;
use std::time::Duration;

use super::*;
use crate::resources::servers::Power;
use crate::talos::faults::{ServerRef, TalosFault};
use crate::talos::node::Mode;
use crate::talos::sample::SampleNetwork;
use crate::talos::testing::{Lab, cluster, control_plane, worker};

const MOMENT: Duration = Duration::from_millis(10);

#[test]
fn boots_into_maintenance_without_a_config() {
    let mut lab = Lab::new();
    let id = lab.server("node-1", "10.0.128.5", "v1.12.6", None);
    lab.tick(Duration::ZERO);
    assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
    assert_eq!(lab.talos(id).node.summary.apid, ApidState::Down);
    lab.tick(MOMENT);
    assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
    lab.tick(Duration::from_millis(100));
    let summary = &lab.talos(id).node.summary;
    assert_eq!(summary.phase, PhaseName::Running);
    assert_eq!(summary.mode, Mode::Maintenance);
    assert_eq!(summary.apid, ApidState::Serving);
    assert_eq!(summary.hostname.as_deref(), Some("node-1"));
    assert!(!summary.healthy);
}

#[test]
fn user_data_configures_the_node_at_boot() {
    let mut lab = Lab::new();
    let cluster = cluster();
    let mut node = control_plane();
    node.hostname = Some("control-1".into());
    let id = lab.server(
        "cp-1",
        "10.0.128.5",
        "v1.12.6",
        Some(cluster.machine_config(&node)),
    );
    lab.settle();
    let talos = lab.talos(id);
    assert_eq!(talos.node.summary.mode, Mode::Configured);
    assert_eq!(talos.node.summary.hostname.as_deref(), Some("control-1"));
    assert_eq!(talos.node.summary.egress_via, Some(GATEWAY_IP));
    assert_eq!(
        talos.node.run.apid_issuer.as_ref(),
        Some(&talos.node.config().unwrap().os_ca)
    );
    assert_eq!(
        talos.node.summary.problem.as_deref(),
        Some("etcd is Preparing: waiting for bootstrap or a running member to join")
    );
}

const GATEWAY_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

#[test]
fn an_invalid_config_in_user_data_halts_talos() {
    let mut lab = Lab::new();
    let config = cluster().machine_config(&control_plane());
    let broken = config.replace("type: controlplane", "type: master");
    let id = lab.server("cp-1", "10.0.128.5", "v1.12.6", Some(broken));
    lab.settle();
    let summary = &lab.talos(id).node.summary;
    assert_eq!(summary.phase, PhaseName::Halted);
    assert!(
        summary
            .problem
            .as_deref()
            .unwrap()
            .contains("unknown machine type"),
        "{summary:?}"
    );
    let other = lab.server(
        "other",
        "10.0.128.6",
        "v1.12.6",
        Some("#cloud-config\n".into()),
    );
    lab.settle();
    assert_eq!(lab.talos(other).node.summary.mode, Mode::Maintenance);
}

#[test]
fn power_cycles_stop_and_restart_talos() {
    let mut lab = Lab::new();
    let id = lab.server("node-1", "10.0.128.5", "v1.12.6", None);
    lab.settle();
    let first = lab.talos(id).node.run.incarnation;
    lab.world.power(id, Power::Off, lab.now).unwrap();
    lab.hetzner();
    lab.tick(Duration::ZERO);
    assert_eq!(lab.talos(id).node.phase, Phase::Off);
    lab.world.power(id, Power::On, lab.now).unwrap();
    lab.hetzner();
    lab.settle();
    assert!(lab.talos(id).node.is_running());
    assert!(lab.talos(id).node.run.incarnation > first);
}

#[test]
fn slow_boot_faults_delay_the_node() {
    let mut lab = Lab::new();
    lab.world.config.talos_faults.push(TalosFault::SlowBoot {
        server: Some(ServerRef::Name("node-1".into())),
        delay_ms: 5_000,
    });
    let id = lab.server("node-1", "10.0.128.5", "v1.12.6", None);
    lab.tick(Duration::ZERO);
    lab.tick(Duration::from_secs(4));
    assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
    lab.tick(Duration::from_secs(2));
    assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Running);
}

#[test]
fn workers_wait_for_trustd_and_control_planes_form_etcd() {
    let mut lab = Lab::new();
    let cluster = cluster();
    let w = lab.server(
        "w-1",
        "10.0.128.20",
        "v1.12.6",
        Some(cluster.machine_config(&worker())),
    );
    lab.settle();
    assert_eq!(
        lab.talos(w).node.summary.apid,
        ApidState::AwaitingCertificate
    );

    let config = cluster.machine_config(&control_plane());
    let cp1 = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config.clone()));
    let cp2 = lab.server("cp-2", "10.0.128.12", "v1.12.6", Some(config));
    lab.settle();
    assert_eq!(lab.talos(w).node.summary.apid, ApidState::Serving);
    let problem = lab
        .talos(w)
        .node
        .summary
        .problem
        .clone()
        .unwrap_or_default();
    assert!(
        problem.contains("unable to register node with API server")
            && problem.contains("waits for etcd"),
        "kubelet registers once the API server at the endpoint runs: {problem}"
    );
    assert!(!lab.talos(cp1).node.summary.etcd_member);

    lab.found_etcd(cp1);
    lab.tick(MOMENT);
    assert!(lab.talos(cp1).node.summary.etcd_member);
    assert!(
        !lab.talos(cp2).node.summary.etcd_member,
        "joins a member seen running"
    );
    lab.etcd_join();
    assert!(lab.talos(cp2).node.summary.etcd_member);
    for id in [w, cp1, cp2] {
        let summary = &lab.talos(id).node.summary;
        assert!(summary.bootstrapped && summary.healthy, "{summary:?}");
    }
}

#[test]
fn without_a_default_route_etcd_never_starts() {
    let mut lab = Lab::new();
    let mut isolated = control_plane();
    isolated.network = SampleNetwork::Isolated;
    let id = lab.server(
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster().machine_config(&isolated)),
    );
    lab.settle();
    lab.found_etcd(id);
    lab.settle();
    let summary = &lab.talos(id).node.summary;
    assert!(!summary.etcd_member && !summary.healthy && summary.egress_via.is_none());
    assert!(
        summary
            .problem
            .as_deref()
            .unwrap()
            .starts_with("no default route")
    );
}

#[test]
fn egress_needs_the_network_route_to_a_running_nat_gateway() {
    let mut lab = Lab::new();
    let id = lab.server(
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster().machine_config(&control_plane())),
    );
    lab.settle();
    assert_eq!(lab.talos(id).node.summary.egress_via, Some(GATEWAY_IP));
    let problem = |lab: &Lab| {
        lab.talos(id)
            .node
            .summary
            .problem
            .clone()
            .unwrap_or_default()
    };

    let nat = lab
        .world
        .servers
        .values()
        .find(|s| s.name == crate::seed::NAT_SERVER)
        .map(|s| s.id)
        .unwrap();
    lab.world.servers.get_mut(&nat).unwrap().status = ServerStatus::Off;
    lab.settle();
    assert_eq!(lab.talos(id).node.summary.egress_via, None);
    assert!(
        problem(&lab).contains("routes 0.0.0.0/0 to 10.0.128.2, but no running server"),
        "{}",
        problem(&lab)
    );

    lab.world.servers.get_mut(&nat).unwrap().status = ServerStatus::Running;
    let network = lab.world.servers[&id].private_net[0].network;
    lab.world.networks.get_mut(&network).unwrap().routes.clear();
    lab.settle();
    assert_eq!(lab.talos(id).node.summary.egress_via, None);
    assert!(
        problem(&lab).contains("has no route 0.0.0.0/0"),
        "{}",
        problem(&lab)
    );
}

#[test]
fn a_deleted_members_server_stays_in_etcd_until_its_successor_joins() {
    let mut lab = Lab::new();
    let config = cluster().machine_config(&control_plane());
    let cp1 = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config.clone()));
    let cp2 = lab.server("cp-2", "10.0.128.12", "v1.12.6", Some(config.clone()));
    let cp3 = lab.server("cp-3", "10.0.128.13", "v1.12.6", Some(config.clone()));
    lab.settle();
    lab.found_etcd(cp1);
    lab.tick(MOMENT);
    lab.etcd_join();
    let listed = |lab: &Lab| -> Vec<(String, bool)> {
        let membership = crate::talos::etcd::membership(&lab.world);
        assert_eq!(membership.len(), 1, "{membership:?}");
        let mut members: Vec<(String, bool)> = membership
            .into_values()
            .next()
            .unwrap()
            .into_iter()
            .map(|m| (m.hostname, m.up))
            .collect();
        members.sort();
        members
    };
    let all_up = vec![
        ("cp-1".to_string(), true),
        ("cp-2".to_string(), true),
        ("cp-3".to_string(), true),
    ];
    assert_eq!(listed(&lab), all_up);
    for id in [cp2, cp3] {
        assert!(lab.talos(id).node.summary.etcd_member);
    }

    // cp-1's server is deleted without leaving etcd: still listed, down.
    lab.world.remove_server(cp1);
    lab.tick(MOMENT);
    let mut expected = all_up.clone();
    expected[0].1 = false;
    assert_eq!(listed(&lab), expected);

    // Its successor of the same name takes its place as it joins.
    lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config.clone()));
    lab.settle();
    lab.tick(MOMENT);
    assert_eq!(listed(&lab), all_up);
    assert!(lab.world.etcd_gone.is_empty());

    // Two of three gone: no quorum, so no successor can join.
    lab.world.remove_server(cp2);
    lab.world.remove_server(cp3);
    let successor = lab.server("cp-2", "10.0.128.12", "v1.12.6", Some(config));
    lab.settle();
    lab.tick(MOMENT);
    assert!(!lab.talos(successor).node.summary.etcd_member);
    assert_eq!(
        listed(&lab),
        [
            ("cp-1".to_string(), true),
            ("cp-2".to_string(), false),
            ("cp-3".to_string(), false),
        ]
    );
}

/// What the supervisor asks every tick: whether a cluster's etcd members,
/// or which of them run, changed since they were last said.
#[test]
fn a_member_whose_node_goes_down_is_a_change_of_etcd_to_say() {
    let mut lab = Lab::new();
    let config = cluster().machine_config(&control_plane());
    let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
    lab.settle();
    lab.found_etcd(cp);
    lab.settle();
    assert!(lab.talos(cp).node.summary.etcd_member);
    lab.world.drain_events();
    assert!(
        !crate::talos::etcd::changed(&lab.world),
        "said as it settled"
    );
    lab.world.power(cp, Power::Off, lab.now).unwrap();
    lab.hetzner();
    // The supervisor's tick: the nodes brought up to now, nothing said.
    let updates = plan(&lab.world, lab.now);
    apply(&mut lab.world, updates, lab.now);
    assert!(
        lab.world
            .drain_events()
            .iter()
            .all(|e| !matches!(e, SimEvent::EtcdMembers { .. }))
    );
    assert!(crate::talos::etcd::changed(&lab.world), "cp-1 is off");
    crate::talos::etcd::watch(&mut lab.world);
    let said = lab.world.drain_events();
    assert!(
        said.iter()
            .any(|e| matches!(e, SimEvent::EtcdMembers { members, .. }
            if members == &[("cp-1".to_string(), false)])),
        "{said:?}"
    );
    assert!(!crate::talos::etcd::changed(&lab.world));
}
