//! Tests of etcd recovery on a lab of emulated nodes: a snapshot of one
//! ring restored on a new control plane after the old one is gone, the
//! refusals and failed restores, the service (roles, proxying, the
//! stream), and what a disk keeps.

use serde_json::{Value, json};
use tonic::{Code, Request, Status};

use super::*;
use crate::clock::Timestamp;
use crate::ids::Id;
use crate::kube::api::{Answer, ApiRequest};
use crate::talos::auth::Caller;
use crate::talos::etcd_snapshot::{self, Source};
use crate::talos::kube_api::store::serve;
use crate::talos::kube_api::version::KubernetesVersion;
use crate::talos::node::{Disk, EtcdData, SavedDisk};
use crate::talos::pb::{self, machine_service_server::MachineService};
use crate::talos::sample::SampleCluster;
use crate::talos::service::MachineApi;
use crate::talos::services::{self, ServiceStatus};
use crate::talos::testing::{Lab, cluster, control_plane, worker};

const USER_MAP: &str = "/api/v1/namespaces/default/configmaps/kept";
const COREDNS_MAP: &str = "/api/v1/namespaces/kube-system/configmaps/coredns";

/// A request to the emulated Kubernetes API of control plane `id`.
fn kube(lab: &mut Lab, id: Id, method: &str, path: &str, body: Option<Value>) -> Answer {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    lab.on(id, |world, at, now| {
        serve(
            world,
            now,
            at,
            &ApiRequest {
                method,
                path,
                query: "",
                content_type: Some("application/json"),
                body: body.as_bytes(),
                server_address: "10.0.128.11:6443",
            },
        )
    })
}

fn ring(lab: &Lab, id: Id) -> u64 {
    lab.talos(id).node.disk.etcd.member.as_ref().unwrap().ring
}

fn etcd_service(lab: &Lab, id: Id) -> ServiceStatus {
    let server = &lab.world.servers[&id];
    let node = &lab.talos(id).node;
    services::of(&lab.world, server, node, node.config().unwrap())
        .into_iter()
        .find(|s| s.id == "etcd")
        .unwrap()
}

/// The old cluster: cp-1 bootstrapped, with a ConfigMap of the user's and
/// without the bootstrap manifests' `coredns` one; its snapshot (the
/// emulated stand-in), and its secrets.
fn old_cluster(lab: &mut Lab) -> (Id, Vec<u8>, SampleCluster) {
    let sample = cluster();
    let config = sample.machine_config(&control_plane());
    let old = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
    lab.settle();
    lab.on(old, |w, at, _| calls::bootstrap(w, at)).unwrap();
    lab.settle();
    let map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kept", "namespace": "default"}, "data": {"k": "v"}});
    let path = "/api/v1/namespaces/default/configmaps";
    assert_eq!(kube(lab, old, "POST", path, Some(map)).code, 201);
    assert_eq!(kube(lab, old, "DELETE", COREDNS_MAP, None).code, 200);
    let source = lab.on(old, |w, at, now| etcd_snapshot::source(w, at, None, now));
    let snapshot = match source {
        Ok(Source::Emulated(snapshot)) => snapshot,
        other => panic!("an emulated ring gives its stand-in: {other:?}"),
    };
    (old, snapshot, sample)
}

/// The disaster: control plane `id`'s server is gone.
fn lose(lab: &mut Lab, id: Id) {
    lab.world.delete_server(id, lab.now).unwrap();
    lab.hetzner();
}

/// A new control plane of the cluster, configured and waiting for etcd.
fn new_control_plane(lab: &mut Lab, name: &str, ip: &str, sample: &SampleCluster) -> Id {
    let config = sample.machine_config(&control_plane());
    let id = lab.server(name, ip, "v1.12.6", Some(config));
    lab.settle();
    id
}

fn upload(lab: &mut Lab, id: Id, snapshot: &[u8]) {
    lab.on(id, |w, at, _| keep(w, at, snapshot.to_vec()))
        .unwrap();
}

fn recover(lab: &mut Lab, id: Id, skip_hash_check: bool) -> Result<(), CallError> {
    lab.on(id, |w, at, _| bootstrap(w, at, skip_hash_check, None))
}

#[test]
fn a_lost_control_plane_comes_back_from_its_snapshot_and_others_join() {
    let mut lab = Lab::new();
    let (old, snapshot, sample) = old_cluster(&mut lab);
    let old_ring = ring(&lab, old);
    lose(&mut lab, old);

    let cp = new_control_plane(&mut lab, "cp-2", "10.0.128.12", &sample);
    upload(&mut lab, cp, &snapshot);
    recover(&mut lab, cp, false).unwrap();
    lab.settle();
    let recovered = ring(&lab, cp);
    assert_ne!(recovered, old_ring, "a new etcd cluster");
    assert_eq!(etcd_service(&lab, cp).state, "Running");
    let disk = &lab.talos(cp).node.disk;
    assert_eq!(disk.etcd_snapshot, None, "the restore removed it");
    assert_eq!(disk.etcd.recovery, None);

    let kept = kube(&mut lab, cp, "GET", USER_MAP, None);
    assert_eq!(kept.code, 200, "{}", kept.body);
    assert_eq!(kept.body["data"]["k"], "v");
    let coredns = kube(&mut lab, cp, "GET", COREDNS_MAP, None);
    assert_eq!(
        coredns.code, 200,
        "the bootstrap manifests are applied again"
    );

    // Another control plane joins the recovered etcd, and sees the same.
    let other = new_control_plane(&mut lab, "cp-3", "10.0.128.13", &sample);
    lab.settle();
    assert_eq!(ring(&lab, other), recovered);
    let members = crate::talos::calls::etcd_members::as_asked(&lab.world, lab.at(other), true)
        .unwrap()
        .members;
    assert_eq!(members.len(), 2, "{members:?}");
    assert_eq!(kube(&mut lab, other, "GET", USER_MAP, None).code, 200);
}

#[test]
fn refused_as_any_bootstrap_and_only_on_configured_control_planes() {
    let mut lab = Lab::new();
    let (old, snapshot, sample) = old_cluster(&mut lab);
    let w = lab.server(
        "w-1",
        "10.0.128.21",
        "v1.12.6",
        Some(sample.machine_config(&worker())),
    );
    let fresh = lab.server("new", "10.0.128.30", "v1.12.6", None);
    lab.settle();

    // Talos takes the upload whatever etcd holds; Bootstrap then refuses.
    upload(&mut lab, old, &snapshot);
    let again = recover(&mut lab, old, false).unwrap_err();
    assert!(matches!(again, CallError::AlreadyBootstrapped), "{again:?}");
    assert_eq!(again.code(), Code::AlreadyExists);

    let on_worker = lab.on(w, |w, at, _| keep(w, at, snapshot.clone()));
    let on_worker = on_worker.unwrap_err();
    assert_eq!(on_worker.code(), Code::Unimplemented);
    assert_eq!(
        on_worker.to_string(),
        "etcd recover is only available on control plane nodes"
    );
    let bootstrap_worker = recover(&mut lab, w, false).unwrap_err();
    assert_eq!(bootstrap_worker.code(), Code::FailedPrecondition);
    let maintenance = lab.on(fresh, |w, at, _| accepts(w, at)).unwrap_err();
    assert!(
        matches!(maintenance, CallError::Maintenance("EtcdRecover")),
        "{maintenance:?}"
    );
    assert_eq!(maintenance.code(), Code::Unimplemented);
}

#[test]
fn without_a_snapshot_etcd_fails_and_the_bootstrap_may_be_repeated() {
    let mut lab = Lab::new();
    let (old, snapshot, sample) = old_cluster(&mut lab);
    lose(&mut lab, old);
    let cp = new_control_plane(&mut lab, "cp-2", "10.0.128.12", &sample);
    // As Talos: the call is taken, the etcd service fails.
    recover(&mut lab, cp, false).unwrap();
    lab.settle();
    let etcd = etcd_service(&lab, cp);
    assert_eq!(etcd.state, "Failed");
    assert_eq!(
        etcd.message,
        "Failed to run pre stage: error verifying snapshot: stat /var/lib/etcd.snapshot: \
         no such file or directory"
    );
    assert!(lab.talos(cp).node.disk.etcd.data_dir_empty());
    assert!(lab.talos(cp).node.disk.etcd.member.is_none());

    // Not a snapshot at all: the same, before anything was written.
    upload(&mut lab, cp, b"{\"not\": \"a store\"");
    recover(&mut lab, cp, false).unwrap();
    let etcd = etcd_service(&lab, cp);
    assert!(
        etcd.message
            .starts_with("Failed to run pre stage: error verifying snapshot: not the snapshot"),
        "{etcd:?}"
    );

    upload(&mut lab, cp, &snapshot);
    recover(&mut lab, cp, false).unwrap();
    lab.settle();
    assert_eq!(etcd_service(&lab, cp).state, "Running");
    assert_eq!(kube(&mut lab, cp, "GET", USER_MAP, None).code, 200);
}

#[test]
fn a_bad_hash_spoils_the_data_directory_unless_the_check_is_skipped() {
    let mut lab = Lab::new();
    let (old, snapshot, sample) = old_cluster(&mut lab);
    lose(&mut lab, old);
    let mut torn = snapshot.clone();
    *torn.last_mut().unwrap() ^= 1;
    let cp = new_control_plane(&mut lab, "cp-2", "10.0.128.12", &sample);
    upload(&mut lab, cp, &torn);
    recover(&mut lab, cp, false).unwrap();
    lab.settle();
    let etcd = etcd_service(&lab, cp);
    assert_eq!(etcd.state, "Failed");
    assert!(
        etcd.message.starts_with(
            "Failed to run pre stage: error recovering from the snapshot: expected sha256 ["
        ),
        "{etcd:?}"
    );
    assert!(lab.talos(cp).node.disk.etcd.member.is_none());
    // etcdutl had written into the data directory: Talos finds it not empty.
    let again = recover(&mut lab, cp, true).unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);
    lab.on(cp, |w, at, now| calls::reset(w, at, true, true, now))
        .unwrap();
    lab.settle();
    let wiped = &lab.talos(cp).node.disk;
    assert_eq!(
        (wiped.etcd_snapshot.as_ref(), wiped.etcd.spoiled.as_ref()),
        (None, None)
    );

    // The same snapshot, its hash not checked.
    let cp = new_control_plane(&mut lab, "cp-3", "10.0.128.13", &sample);
    upload(&mut lab, cp, &torn);
    recover(&mut lab, cp, true).unwrap();
    lab.settle();
    assert_eq!(etcd_service(&lab, cp).state, "Running");
    assert_eq!(kube(&mut lab, cp, "GET", USER_MAP, None).code, 200);

    // Without its hash: only with the check skipped.
    let body = &snapshot[..snapshot.len() - HASH_LEN];
    assert!(
        matches!(emulated_store(body, false), Err(Failure::Spoiled(m)) if m.contains("snapshot missing hash"))
    );
    assert!(emulated_store(body, true).is_ok());
}

#[test]
fn a_real_rings_snapshot_is_checked_as_etcdutl_checks_it() {
    let mut db = vec![0_u8; 8192];
    db[16..20].copy_from_slice(&BBOLT_MAGIC.to_le_bytes());
    let sealed = etcd_snapshot::sealed(db.clone());
    assert_eq!(real_check(&sealed, false), Ok(()));
    let json = etcd_snapshot::sealed(b"{}".to_vec());
    assert_eq!(
        real_check(&json, false),
        Err(Failure::PreStage(
            "error verifying snapshot: invalid database".into()
        ))
    );
    let mut torn = sealed.clone();
    torn[100] ^= 1;
    assert!(matches!(real_check(&torn, false), Err(Failure::Spoiled(_))));
    assert_eq!(real_check(&torn, true), Ok(()));
    let missing = real_check(&db, false).unwrap_err();
    assert_eq!(
        missing,
        Failure::Spoiled(
            "error recovering from the snapshot: snapshot missing hash but --skip-hash-check=false"
                .into()
        )
    );
    assert_eq!(go_bytes(&[1, 22, 255]), "[1 22 255]");
}

#[test]
fn a_real_rings_recovery_waits_for_its_etcd_with_the_snapshot_kept() {
    let mut lab = Lab::new();
    let cp = new_control_plane(&mut lab, "cp-1", "10.0.128.11", &cluster());
    let parsed = lab.talos(cp).node.config().unwrap().clone();
    let release =
        KubernetesVersion::of(parsed.kubernetes_version.as_deref(), &parsed.installs).git_version;
    let mut db = vec![0_u8; 4096];
    db[16..20].copy_from_slice(&BBOLT_MAGIC.to_le_bytes());
    let snapshot = etcd_snapshot::sealed(db);
    upload(&mut lab, cp, &snapshot);
    lab.on(cp, |w, at, _| bootstrap(w, at, true, Some(&release)))
        .unwrap();
    lab.settle();
    let disk = &lab.talos(cp).node.disk;
    let recovery = disk.etcd.recovery.clone().unwrap();
    assert_eq!(disk.etcd.member.as_ref().unwrap().ring, recovery.ring);
    assert_eq!(
        recovery.real,
        Some(RealRestore {
            skip_hash_check: true
        })
    );
    assert_eq!(disk.etcd_snapshot.as_ref().unwrap().bytes(), snapshot);
}

#[test]
fn the_disk_keeps_the_upload_and_the_recovery_through_a_save() {
    let mut lab = Lab::new();
    let (old, snapshot, sample) = old_cluster(&mut lab);
    lose(&mut lab, old);
    let cp = new_control_plane(&mut lab, "cp-2", "10.0.128.12", &sample);
    upload(&mut lab, cp, &snapshot);
    lab.on(cp, calls::reboot).unwrap();
    lab.settle();
    let disk = lab.talos(cp).node.disk.clone();
    assert_eq!(disk.etcd_snapshot.as_ref().unwrap().bytes(), snapshot);
    let saved: SavedDisk =
        serde_json::from_str(&serde_json::to_string(&SavedDisk::of(&disk)).unwrap()).unwrap();
    let mut restored = saved.restore(None);
    restored.config = disk.config.clone();
    restored.staged = disk.staged.clone();
    assert_eq!(restored, disk);
    let spoiled = Disk {
        etcd: EtcdData {
            recovery: Some(Recovery {
                ring: 7,
                real: Some(RealRestore {
                    skip_hash_check: false,
                }),
            }),
            spoiled: Some("Failed".into()),
            ..EtcdData::default()
        },
        ..Disk::default()
    };
    assert_eq!(SavedDisk::of(&spoiled).restore(None), spoiled);
}

/// The machine API of `id`, serving a world a lab built an hour ago.
fn served(lab: Lab, id: Id) -> (crate::app::AppState, MachineApi) {
    let at = lab.at(id);
    let shared = crate::app::Shared::new(
        lab.world,
        "token".into(),
        crate::ratelimit::RateLimiter::per_hour(3600),
        crate::faults::RouteFaults::new(Vec::new(), None),
    );
    let sim = std::sync::Arc::new(shared);
    (sim.clone(), MachineApi::new(sim, at))
}

fn as_caller<T>(mut request: Request<T>, roles: &[&str], node: Option<&str>) -> Request<T> {
    request.extensions_mut().insert(Caller::Verified {
        roles: roles.iter().map(|r| r.to_string()).collect(),
    });
    if let Some(ip) = node {
        request.metadata_mut().insert("node", ip.parse().unwrap());
    }
    request
}

fn chunks(snapshot: &[u8]) -> tokio_stream::Iter<std::vec::IntoIter<Result<pb::Data, Status>>> {
    let chunks: Vec<Result<pb::Data, Status>> = snapshot
        .chunks(4096)
        .map(|c| {
            Ok(pb::Data {
                metadata: None,
                bytes: c.to_vec(),
            })
        })
        .collect();
    tokio_stream::iter(chunks)
}

#[tokio::test]
async fn the_service_takes_the_stream_for_admins_proxied_and_bootstraps_from_it() {
    let mut lab = Lab::starting_at(Timestamp::from_millis(
        Timestamp::now().millis() - 3_600_000,
    ));
    let (old, snapshot, sample) = old_cluster(&mut lab);
    lose(&mut lab, old);
    let cp = new_control_plane(&mut lab, "cp-2", "10.0.128.12", &sample);
    let (sim, api) = served(lab, cp);

    let operator = api
        .etcd_recover_upload(as_caller(
            Request::new(chunks(&snapshot)),
            &["os:operator"],
            None,
        ))
        .await
        .unwrap_err();
    assert_eq!(operator.code(), Code::PermissionDenied);
    let answer = api
        .etcd_recover_upload(as_caller(
            Request::new(chunks(&snapshot)),
            &["os:admin"],
            Some("10.0.128.12"),
        ))
        .await
        .unwrap()
        .into_inner();
    let hostname = answer.messages[0]
        .metadata
        .as_ref()
        .map(|m| m.hostname.as_str());
    assert_eq!(hostname, Some("cp-2"));
    let kept = sim.world().servers[&cp]
        .talos
        .as_ref()
        .unwrap()
        .node
        .disk
        .etcd_snapshot
        .clone();
    assert_eq!(kept.unwrap().bytes(), snapshot);

    let request = pb::BootstrapRequest {
        recover_etcd: true,
        recover_skip_hash_check: false,
    };
    api.bootstrap(as_caller(Request::new(request), &["os:admin"], None))
        .await
        .unwrap();
    // The call settles the node: it founded the recovered etcd at once.
    let world = sim.world();
    let disk = &world.servers[&cp].talos.as_ref().unwrap().node.disk;
    assert!(disk.etcd.member.is_some(), "{disk:?}");
    assert_eq!((&disk.etcd.recovery, &disk.etcd_snapshot), (&None, &None));
    let logged: Vec<String> = world.talos_calls.iter().map(|c| c.call.clone()).collect();
    assert_eq!(logged, ["EtcdRecover", "EtcdRecover", "Bootstrap"]);
}
