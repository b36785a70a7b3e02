//! Tests of EtcdSnapshot: the emulated stand-in and the refusals on a lab
//! of emulated nodes, and (given `HCT_PEERS_ENV` with an `ETCD=` line) a
//! real etcd's snapshot over its gateway.

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha256};

use tonic::Request;

use super::*;
use crate::clock::Timestamp;
use crate::ids::Id;
use crate::talos::auth::Caller;
use crate::talos::kube_api::version::KubernetesVersion;
use crate::talos::kube_control_plane::{Endpoints, Status};
use crate::talos::pb::{self, machine_service_server::MachineService};
use crate::talos::service::MachineApi;
use crate::talos::testing::{Lab, cluster, control_plane, worker};

/// A control plane, bootstrapped and with its etcd running, and a worker
/// of its cluster.
fn bootstrapped() -> (Lab, Id, Id) {
    bootstrapped_at(Lab::new())
}

fn bootstrapped_at(mut lab: Lab) -> (Lab, Id, Id) {
    let cluster = cluster();
    let cp = lab.server(
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster.machine_config(&control_plane())),
    );
    let w = lab.server(
        "w-1",
        "10.0.128.21",
        "v1.12.6",
        Some(cluster.machine_config(&worker())),
    );
    lab.settle();
    lab.on(cp, |w, at, _| calls::bootstrap(w, at)).unwrap();
    lab.settle();
    lab.settle();
    (lab, cp, w)
}

fn snapshot_of(lab: &mut Lab, id: Id, release: Option<&str>) -> Result<Source, SnapshotError> {
    lab.on(id, |world, at, now| source(world, at, release, now))
}

#[test]
fn an_emulated_snapshot_is_the_store_followed_by_its_sha256() {
    let (mut lab, cp, _) = bootstrapped();
    let Source::Emulated(snapshot) = snapshot_of(&mut lab, cp, None).unwrap() else {
        panic!("an emulated ring has no real etcd");
    };
    let (body, hash) = snapshot.split_at(snapshot.len() - HASH_LEN);
    assert_eq!(hash, Sha256::digest(body).as_slice());
    let store: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert!(store["revision"].as_u64().unwrap() > 0, "{store}");
    assert_eq!(
        store["bootstrap_manifests_applied"], true,
        "brought up to date as its API server would be"
    );
    assert!(verified(snapshot.clone()).is_ok());

    let mut torn = snapshot;
    torn[0] ^= 1;
    let bad = verified(torn).unwrap_err();
    assert_eq!(bad.code(), Code::Internal);
    assert_eq!(verified(vec![0; 5]).unwrap_err().code(), Code::Internal);
}

#[test]
fn workers_and_nodes_without_a_running_etcd_refuse() {
    let (mut lab, _, w) = bootstrapped();
    let refused = snapshot_of(&mut lab, w, None).unwrap_err();
    assert!(
        matches!(
            refused,
            SnapshotError::Call(CallError::ControlPlaneOnly("etcd snapshot"))
        ),
        "{refused:?}"
    );
    assert_eq!(refused.code(), Code::Unimplemented);
    assert_eq!(
        refused.to_string(),
        "etcd snapshot is only available on control plane nodes"
    );

    // A control plane not bootstrapped yet: its etcd waits.
    let mut lab = Lab::new();
    let cp = lab.server(
        "cp-1",
        "10.0.128.11",
        "v1.12.6",
        Some(cluster().machine_config(&control_plane())),
    );
    let fresh = lab.server("new", "10.0.128.30", "v1.12.6", None);
    lab.settle();
    let waiting = snapshot_of(&mut lab, cp, None).unwrap_err();
    assert!(matches!(waiting, SnapshotError::EtcdDown(_)), "{waiting:?}");
    assert_eq!(waiting.code(), Code::Unavailable);
    assert!(
        waiting
            .to_string()
            .starts_with("failed reading etcd snapshot: etcd is "),
        "{waiting}"
    );
    let maintenance = snapshot_of(&mut lab, fresh, None).unwrap_err();
    assert_eq!(maintenance.code(), Code::Unimplemented);
}

#[tokio::test]
async fn a_ring_of_the_real_release_is_taken_from_its_real_etcd() {
    let (mut lab, cp, _) = bootstrapped();
    let config = lab.talos(cp).node.config().unwrap().clone();
    let member = lab.talos(cp).node.disk.etcd.member.clone().unwrap();
    let release =
        KubernetesVersion::of(config.kubernetes_version.as_deref(), &config.installs).git_version;
    let store = store_id(&config.cluster, member.ring);
    assert_eq!(
        snapshot_of(&mut lab, cp, Some("v0.0.1")).unwrap(),
        snapshot_of(&mut lab, cp, None).unwrap(),
        "another release stays emulated"
    );
    let real = snapshot_of(&mut lab, cp, Some(&release)).unwrap();
    assert_eq!(
        real,
        Source::Real {
            store: store.clone(),
            member: format!("{}-{:x}", member.hostname, member.id),
        }
    );

    let registry = Registry::default();
    registry.set(&store, Status::Failed("etcd exited".into()));
    let down = take(&registry, real).await.unwrap_err();
    assert!(matches!(down, SnapshotError::RealDown(_)), "{down:?}");
    assert_eq!(down.code(), Code::Unavailable);

    let emulated = snapshot_of(&mut lab, cp, None).unwrap();
    let Source::Emulated(bytes) = emulated.clone() else {
        unreachable!()
    };
    assert_eq!(take(&registry, emulated).await.unwrap(), bytes);
}

/// The machine API of `id`, serving a world a lab built an hour ago (the
/// service reads the wall clock).
fn served_lab() -> (crate::app::AppState, Id, Id, NodeRef) {
    let hour_ago = Timestamp::from_millis(Timestamp::now().millis() - 3_600_000);
    let (lab, cp, w) = bootstrapped_at(Lab::starting_at(hour_ago));
    let at = lab.at(cp);
    (lab.into_app(), cp, w, at)
}

fn snapshot_request(roles: &[&str], node: Option<&str>) -> Request<pb::EtcdSnapshotRequest> {
    let mut request = Request::new(pb::EtcdSnapshotRequest {});
    request.extensions_mut().insert(Caller::Verified {
        roles: roles.iter().map(|r| r.to_string()).collect(),
    });
    if let Some(ip) = node {
        request.metadata_mut().insert("node", ip.parse().unwrap());
    }
    request
}

#[tokio::test]
async fn the_service_streams_it_in_talos_chunks_and_proxies() {
    use tokio_stream::StreamExt;

    let (sim, _, _, at) = served_lab();
    let api = MachineApi::new(sim.clone(), at);
    let stream = api
        .etcd_snapshot(snapshot_request(&["os:etcd:backup"], Some("10.0.128.11")))
        .await
        .unwrap()
        .into_inner();
    let chunks: Vec<pb::Data> = stream.map(Result::unwrap).collect().await;
    assert!(chunks.len() > 1, "{} chunks", chunks.len());
    let (last, full) = chunks.split_last().unwrap();
    assert!(full.iter().all(|c| c.bytes.len() == 1024));
    assert!(!last.bytes.is_empty() && last.bytes.len() <= 1024);
    let hostname = |c: &pb::Data| c.metadata.as_ref().map(|m| m.hostname.clone());
    assert!(
        chunks
            .iter()
            .all(|c| hostname(c).as_deref() == Some("cp-1"))
    );
    let snapshot: Vec<u8> = chunks.into_iter().flat_map(|c| c.bytes).collect();
    assert!(verified(snapshot).is_ok());

    let on_worker = api
        .etcd_snapshot(snapshot_request(&["os:admin"], Some("10.0.128.21")))
        .await
        .unwrap_err();
    assert_eq!(on_worker.code(), tonic::Code::Unimplemented);
    let reader = api
        .etcd_snapshot(snapshot_request(&["os:reader"], None))
        .await
        .unwrap_err();
    assert_eq!(reader.code(), tonic::Code::PermissionDenied);
    let logged: Vec<String> = sim
        .world()
        .talos_calls
        .iter()
        .map(|c| c.call.clone())
        .collect();
    assert_eq!(logged, ["EtcdSnapshot"; 3], "each call is logged");
}

/// bbolt's magic, in each meta page (at byte 16 of page 0, little-endian).
const BBOLT_MAGIC: u32 = 0xED0C_DAED;

#[tokio::test]
async fn a_real_etcd_snapshot_is_a_bbolt_database_and_its_hash() {
    use crate::talos::kube_control_plane::etcd_member::{MemberFiles, Ports};
    use crate::talos::kube_control_plane::files::Layout;
    use crate::talos::kube_control_plane::process::Component;

    let Some(binary) = crate::talos::testing::peer("ETCD") else {
        eprintln!("SKIPPED: no real etcd (set HCT_PEERS_ENV to scripts/ensure-peers' output)");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let layout = Layout::of(work.path(), "lab/0000000000000001");
    std::fs::create_dir_all(&layout.dir).unwrap();
    let member = MemberFiles::of(&layout, "cp-1-1", Ports::free().unwrap());
    let mut etcd = Component::spawn(
        "etcd",
        &binary,
        &member.args(&member.alone(), "new"),
        &layout.dir,
    )
    .unwrap();
    let addr = member.client();
    let http = gateway::client().unwrap();
    let base = format!("http://{addr}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        etcd.check().unwrap();
        let health = http.get(format!("{base}/health")).send().await;
        if let Ok(answer) = health
            && answer.text().await.is_ok_and(|t| t.contains("\"true\""))
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "etcd never healthy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let key = BASE64.encode("hct-sim-snapshot-key");
    let value = BASE64.encode("hct-sim-snapshot-value");
    let put = http
        .post(format!("{base}/v3/kv/put"))
        .body(format!(r#"{{"key":"{key}","value":"{value}"}}"#))
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success());

    let registry = Registry::default();
    let store = "lab/0000000000000001";
    registry.set(
        store,
        Status::Ready(Endpoints {
            api: SocketAddr::from(([127, 0, 0, 1], 9)),
            // The ring's front, where no member answers: the snapshot is
            // the node's member's.
            etcd: SocketAddr::from(([127, 0, 0, 1], 9)),
        }),
    );
    // The node's own member, as the ring lists it.
    registry.set_etcd(
        store,
        Some(vec![crate::talos::kube_control_plane::etcd_api::Member {
            id: 1,
            name: member.name.clone(),
            peer_urls: vec![member.peer_url()],
            client_urls: vec![format!("http://{addr}")],
            is_learner: false,
        }]),
        vec![member.name.clone()],
    );
    let source = Source::Real {
        store: store.into(),
        member: member.name.clone(),
    };
    let snapshot = take(&registry, source).await.unwrap();
    assert!(snapshot.len() > HASH_LEN + 4096, "{} bytes", snapshot.len());
    let magic = u32::from_le_bytes(snapshot[16..20].try_into().unwrap());
    assert_eq!(magic, BBOLT_MAGIC, "a bbolt meta page first");
    let body = &snapshot[..snapshot.len() - HASH_LEN];
    assert!(
        body.windows(22).any(|w| w == b"hct-sim-snapshot-value"),
        "the value put is in the database"
    );
    etcd.check().unwrap();
}
