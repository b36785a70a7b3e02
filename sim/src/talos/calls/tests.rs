//! Tests of the Talos API calls, on a lab of emulated nodes.

use std::time::Duration;

use super::etcd_members::{answer, as_asked as members_as_asked};
use super::*;
use crate::talos::faults::{GrpcCode, TalosFault};
use crate::talos::kube_control_plane::EtcdListing;
use crate::talos::node::{Mode, PhaseName};
use crate::talos::sample::{SampleCluster, SampleNetwork, SampleNode};
use crate::talos::testing::{Lab, cluster, control_plane, worker};

fn request(config: &str, mode: ApplyMode) -> ApplyRequest<'_> {
    ApplyRequest {
        data: config.as_bytes(),
        mode,
        dry_run: false,
        try_timeout: None,
    }
}

fn apply(lab: &mut Lab, id: Id, config: &str, mode: ApplyMode) -> Result<Applied, CallError> {
    lab.on(id, |w, at, now| {
        apply_configuration(w, at, &request(config, mode), now)
    })
}

#[test]
fn maintenance_apply_installs_the_configured_release_and_reboots() {
    let mut lab = Lab::new();
    let id = lab.server("cp-1", "10.0.128.11", "v1.11.3", None);
    lab.settle();
    let cluster = cluster();
    // A v1.11-style config that installs v1.12.6.
    let mut node = SampleNode::new(true, "v1.12.6", "10.0.0.1");
    node.network = SampleNetwork::Interfaces {
        gateway: "10.0.0.1".into(),
    };
    let config = cluster.machine_config(&node);
    assert!(matches!(
        apply(&mut lab, id, &config, ApplyMode::NoReboot),
        Err(CallError::ModeInMaintenance(ApplyMode::NoReboot))
    ));
    let mut dry = request(&config, ApplyMode::Auto);
    dry.dry_run = true;
    let summary = lab
        .on(id, |w, at, now| apply_configuration(w, at, &dry, now))
        .unwrap();
    assert!(summary.details.starts_with("Dry run summary"));
    assert_eq!(lab.talos(id).node.mode(), Mode::Maintenance);

    let before = lab.at(id);
    let applied = apply(&mut lab, id, &config, ApplyMode::Auto).unwrap();
    assert_eq!(applied.mode, ApplyMode::Reboot);
    assert!(matches!(
        version(&lab.world, before),
        Err(CallError::Rebooting)
    ));
    lab.settle();
    let report = version(&lab.world, lab.at(id)).unwrap();
    assert_eq!(
        (report.tag.as_str(), report.maintenance),
        ("v1.12.6", false)
    );
}

#[test]
fn configured_nodes_apply_with_or_without_reboot() {
    let mut lab = Lab::new();
    let cluster = cluster();
    let id = lab.server(
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster.machine_config(&control_plane())),
    );
    lab.settle();
    let mut isolated = control_plane();
    isolated.network = SampleNetwork::Isolated;
    let same_cluster = cluster.machine_config(&isolated);
    let other_cluster = SampleCluster::generate("other", "https://x:6443")
        .unwrap()
        .machine_config(&control_plane());

    let incarnation = lab.at(id).incarnation;
    let applied = apply(&mut lab, id, &same_cluster, ApplyMode::NoReboot).unwrap();
    assert_eq!(applied.mode, ApplyMode::NoReboot);
    assert_eq!(lab.at(id).incarnation, incarnation);
    assert!(lab.talos(id).node.config().unwrap().routes.is_empty());
    assert!(matches!(
        apply(&mut lab, id, &other_cluster, ApplyMode::NoReboot),
        Err(CallError::NeedsReboot { .. })
    ));

    let staged = apply(
        &mut lab,
        id,
        &cluster.machine_config(&control_plane()),
        ApplyMode::Staged,
    );
    assert_eq!(staged.unwrap().mode, ApplyMode::Staged);
    assert!(lab.talos(id).node.config().unwrap().routes.is_empty());
    lab.on(id, reboot).unwrap();
    lab.settle();
    assert_eq!(lab.talos(id).node.config().unwrap().routes.len(), 1);

    let mut trial = request(&same_cluster, ApplyMode::Try);
    trial.try_timeout = Some(Duration::from_secs(30));
    lab.on(id, |w, at, now| apply_configuration(w, at, &trial, now))
        .unwrap();
    assert!(lab.talos(id).node.config().unwrap().routes.is_empty());
    lab.tick(Duration::from_secs(31));
    assert_eq!(
        lab.talos(id).node.config().unwrap().routes.len(),
        1,
        "rolled back"
    );

    let applied = apply(&mut lab, id, &other_cluster, ApplyMode::Auto).unwrap();
    assert_eq!(applied.mode, ApplyMode::Reboot);
    assert_eq!(
        lab.talos(id).node.summary.phase,
        PhaseName::Running,
        "not yet summarized"
    );
    lab.tick(Duration::ZERO);
    assert_eq!(lab.talos(id).node.summary.phase, PhaseName::Booting);
}

#[test]
fn bootstrap_is_refused_only_where_etcd_data_exists() {
    let mut lab = Lab::new();
    let cluster = cluster();
    let cp1 = lab.server(
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster.machine_config(&control_plane())),
    );
    let cp2 = lab.server(
        "cp-2",
        "10.0.128.12",
        "v1.12.6",
        Some(cluster.machine_config(&control_plane())),
    );
    let w = lab.server(
        "w-1",
        "10.0.128.21",
        "v1.12.6",
        Some(cluster.machine_config(&worker())),
    );
    let fresh = lab.server("new", "10.0.128.30", "v1.12.6", None);
    lab.settle();
    assert!(matches!(
        kubeconfig_source(&lab.world, lab.at(cp1)),
        Err(CallError::NotBootstrapped)
    ));
    assert!(matches!(
        lab.on(w, |w, at, _| bootstrap(w, at)),
        Err(CallError::BootstrapOnWorker)
    ));
    assert!(matches!(
        lab.on(fresh, |w, at, _| bootstrap(w, at)),
        Err(CallError::Maintenance("Bootstrap"))
    ));
    lab.on(cp1, |w, at, _| bootstrap(w, at)).unwrap();
    let again = lab.on(cp1, |w, at, _| bootstrap(w, at)).unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    assert!(kubeconfig_source(&lab.world, lab.at(cp1)).is_ok());
    // As in Talos, only the node's own etcd data counts: cp-2 has none
    // yet, so a Bootstrap there starts a second etcd, split from cp-1's.
    lab.on(cp2, |w, at, _| bootstrap(w, at)).unwrap();
    lab.settle();
    let first = members_as_asked(&lab.world, lab.at(cp1), true)
        .unwrap()
        .members;
    let second = members_as_asked(&lab.world, lab.at(cp2), true)
        .unwrap()
        .members;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(first[0].ring, second[0].ring);
    let again = lab.on(cp2, |w, at, _| bootstrap(w, at)).unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    assert!(matches!(
        kubeconfig_source(&lab.world, lab.at(w)),
        Err(CallError::ControlPlaneOnly("kubeconfig"))
    ));
    assert!(matches!(
        members_as_asked(&lab.world, lab.at(w), false),
        Err(CallError::ControlPlaneOnly("member list"))
    ));
}

/// `count` control planes (cp-1, cp-2, …) configured in maintenance mode,
/// etcd bootstrapped on the first and joined by the others.
fn bootstrapped_control_planes(lab: &mut Lab, count: usize) -> Vec<Id> {
    let config = cluster().machine_config(&control_plane());
    let ids: Vec<Id> = (0..count)
        .map(|i| {
            let name = format!("cp-{}", i + 1);
            lab.server(&name, &format!("10.0.128.{}", 11 + i), "v1.12.6", None)
        })
        .collect();
    lab.settle();
    for id in &ids {
        apply(lab, *id, &config, ApplyMode::Auto).unwrap();
    }
    lab.settle();
    lab.on(ids[0], |w, at, _| bootstrap(w, at)).unwrap();
    lab.settle();
    assert_eq!(
        members_as_asked(&lab.world, lab.at(ids[0]), true)
            .unwrap()
            .members
            .len(),
        count
    );
    ids
}

/// The hostnames the etcd of `id`'s node lists, up or not.
fn listed(lab: &Lab, id: Id) -> Vec<String> {
    let node = &lab.talos(id).node;
    let ring = node.disk.etcd.member.as_ref().unwrap().ring;
    Clusters::of(&lab.world)
        .members(&node.config().unwrap().cluster, ring)
        .into_iter()
        .map(|m| m.hostname)
        .collect()
}

/// As Talos: asked for all of the cluster, any running member answers (a
/// node whose own etcd is empty or down too); asked locally, only its own;
/// etcd without quorum says "no leader"; no etcd at all is a deadline.
#[test]
fn the_member_list_is_the_clusters_and_needs_a_quorum() {
    let mut lab = Lab::new();
    let config = cluster().machine_config(&control_plane());
    let fresh = lab.server("cp-1", "10.0.128.11", "v1.12.6", None);
    lab.settle();
    apply(&mut lab, fresh, &config, ApplyMode::Auto).unwrap();
    lab.settle();
    for local in [true, false] {
        assert!(matches!(
            members_as_asked(&lab.world, lab.at(fresh), local),
            Err(CallError::EtcdUnreachable)
        ));
    }
    assert_eq!(CallError::EtcdUnreachable.code(), Code::DeadlineExceeded);

    let mut lab = Lab::new();
    let ids = bootstrapped_control_planes(&mut lab, 3);
    lab.on(ids[2], |w, at, now| reset(w, at, false, true, now))
        .unwrap();
    lab.settle();
    assert!(lab.talos(ids[2]).node.disk.etcd.is_empty());
    let ours = read_file(&lab.world, lab.at(ids[0]), config::CONFIG_PATH).unwrap();
    let ours = String::from_utf8(ours).unwrap();
    apply(&mut lab, ids[2], &ours, ApplyMode::Auto).unwrap();
    // Configured and up, not joined yet (that takes `talos_etcd_join`).
    lab.tick(Duration::ZERO);
    lab.tick(Duration::from_secs(10));
    assert!(matches!(
        members_as_asked(&lab.world, lab.at(ids[2]), true),
        Err(CallError::EtcdUnreachable)
    ));
    let through_others = members_as_asked(&lab.world, lab.at(ids[2]), false)
        .unwrap()
        .members;
    assert!(through_others.iter().any(|m| m.hostname == "cp-1"));

    lab.on(ids[1], |w, at, now| reset(w, at, false, false, now))
        .unwrap();
    lab.on(ids[2], |w, at, now| reset(w, at, false, false, now))
        .unwrap();
    lab.settle();
    for local in [true, false] {
        let listed = members_as_asked(&lab.world, lab.at(ids[0]), local).unwrap();
        assert!(!listed.quorum(), "1 of 3 members runs");
        let answer = answer(listed, EtcdListing::Emulated).unwrap_err();
        assert!(matches!(answer, CallError::EtcdNoLeader), "{answer:?}");
        assert_eq!(answer.to_string(), "etcdserver: no leader");
    }
}

#[test]
fn resets_leave_etcd_gracefully_or_stay_listed() {
    let mut lab = Lab::new();
    let ids = bootstrapped_control_planes(&mut lab, 3);

    lab.on(ids[1], |w, at, now| reset(w, at, true, true, now))
        .unwrap();
    lab.on(ids[2], |w, at, now| reset(w, at, false, false, now))
        .unwrap();
    lab.hetzner();
    lab.settle();
    assert_eq!(listed(&lab, ids[0]), ["cp-1", "cp-3"]);
    assert_eq!(lab.talos(ids[1]).node.summary.mode, Mode::Maintenance);
    assert!(lab.talos(ids[1]).node.is_running());
    let off = &lab.world.servers[&ids[2]];
    assert_eq!(
        off.status,
        ServerStatus::Off,
        "reset without reboot powers off"
    );
}

#[test]
fn proxying_reaches_running_peers_of_the_same_cluster() {
    let mut lab = Lab::new();
    let cluster = cluster();
    let config = cluster.machine_config(&control_plane());
    let cp1 = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config.clone()));
    let cp2 = lab.server("cp-2", "10.0.128.12", "v1.12.6", Some(config));
    let stranger = SampleCluster::generate("other", "https://x:6443").unwrap();
    lab.server(
        "x-1",
        "10.0.128.13",
        "v1.12.6",
        Some(stranger.machine_config(&control_plane())),
    );
    lab.settle();
    let ip = |text: &str| text.parse::<IpAddr>().unwrap();
    assert_eq!(
        peer(&lab.world, lab.at(cp1), ip("10.0.128.12")).unwrap(),
        lab.at(cp2)
    );
    assert_eq!(
        peer(&lab.world, lab.at(cp1), ip("10.0.128.11")).unwrap(),
        lab.at(cp1)
    );
    for elsewhere in ["10.0.128.13", "10.0.128.99"] {
        assert!(matches!(
            peer(&lab.world, lab.at(cp1), ip(elsewhere)),
            Err(CallError::NoSuchPeer(_))
        ));
    }
    assert_eq!(hostname(&lab.world, lab.at(cp2)).unwrap(), "cp-2");
}

#[test]
fn injected_rejections_come_before_validation() {
    let mut lab = Lab::new();
    let id = lab.server("cp-1", "10.0.128.11", "v1.12.6", None);
    lab.settle();
    lab.world
        .config
        .talos_faults
        .push(TalosFault::ApplyRejected {
            server: None,
            code: GrpcCode(Code::Unavailable),
            message: None,
            count: Some(1),
        });
    let rejected = apply(&mut lab, id, "not even yaml: [", ApplyMode::Auto).unwrap_err();
    assert_eq!(rejected.code(), Code::Unavailable);
    let invalid = apply(&mut lab, id, "not even yaml: [", ApplyMode::Auto).unwrap_err();
    assert_eq!(invalid.code(), Code::InvalidArgument);
}

#[test]
fn the_stored_config_reads_back_byte_for_byte_as_applied() {
    let mut lab = Lab::new();
    let id = lab.server("cp-1", "10.0.128.11", "v1.12.6", None);
    lab.settle();
    // Comments, a document marker and a trailing blank line: Talos keeps
    // the applied bytes, so none of it is normalised away.
    let config = format!(
        "# applied by a test\n---\n{}\n# the end\n\n",
        cluster().machine_config(&control_plane())
    );
    apply(&mut lab, id, &config, ApplyMode::Auto).unwrap();
    lab.settle();
    let stored = lab
        .on(id, |w, at, _| read_file(w, at, config::CONFIG_PATH))
        .unwrap();
    assert_eq!(String::from_utf8(stored).unwrap(), config);
    assert!(matches!(
        lab.on(id, |w, at, _| read_file(w, at, "/etc/hosts")),
        Err(CallError::NoSuchFile(_))
    ));
}

#[test]
fn an_upgrade_without_egress_fails_pulling_the_installer() {
    let mut lab = Lab::new();
    let id = lab.server(
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster().machine_config(&control_plane())),
    );
    lab.settle();
    let nat = lab
        .world
        .servers
        .values()
        .find(|s| s.name == crate::seed::NAT_SERVER)
        .map(|s| s.id)
        .unwrap();
    lab.world.servers.get_mut(&nat).unwrap().status = ServerStatus::Off;
    let image = "factory.talos.dev/hcloud-installer/abc:v1.12.7";
    let err = lab
        .on(id, |w, at, now| upgrade(w, at, image, now))
        .unwrap_err();
    assert_eq!(err.code(), Code::Unknown);
    let text = err.to_string();
    assert!(text.contains("error validating installer image"), "{text}");
    assert!(text.contains("no egress"), "{text}");
    assert!(lab.talos(id).node.is_running(), "nothing happened");

    lab.world.servers.get_mut(&nat).unwrap().status = ServerStatus::Running;
    let version = lab.on(id, |w, at, now| upgrade(w, at, image, now)).unwrap();
    assert_eq!(version.to_string(), "v1.12.7");
}

#[test]
fn a_reinstalled_node_comes_back_empty_or_someone_elses_and_etcd_still_lists_it() {
    use crate::talos::faults::{Reinstall, ServerRef};
    let mut lab = Lab::new();
    let ids = bootstrapped_control_planes(&mut lab, 2);
    let ours = lab.talos(ids[0]).node.config().unwrap().cluster.clone();

    let now = lab.now;
    crate::talos::reinstall::reinstall(
        &mut lab.world,
        &ServerRef::Name("cp-2".into()),
        Reinstall::ForeignCa,
        now,
    )
    .unwrap();
    lab.settle();
    let other = lab.talos(ids[1]).node.config().unwrap();
    assert_ne!(other.cluster, ours, "configured by another cluster");
    assert_ne!(other.os_ca, lab.talos(ids[0]).node.config().unwrap().os_ca);
    assert_eq!(listed(&lab, ids[0]), ["cp-1", "cp-2"], "still listed");

    crate::talos::reinstall::reinstall(
        &mut lab.world,
        &ServerRef::Name("cp-2".into()),
        Reinstall::Maintenance,
        lab.now,
    )
    .unwrap();
    lab.settle();
    assert_eq!(lab.talos(ids[1]).node.summary.mode, Mode::Maintenance);
    assert!(lab.talos(ids[1]).node.disk.etcd.is_empty());
    assert!(
        crate::talos::reinstall::reinstall(
            &mut lab.world,
            &ServerRef::Name("nobody".into()),
            Reinstall::Maintenance,
            lab.now,
        )
        .is_err()
    );
}
