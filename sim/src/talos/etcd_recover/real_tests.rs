//! Tests of a recovering ring with real components: without etcdutl its
//! control plane fails visibly; with the binaries of `HCT_PEERS_ENV`
//! (`ETCD=` and `ETCDUTL=` lines of `scripts/ensure-peers`), a real etcd's
//! snapshot, uploaded to a new control plane and bootstrapped from, is
//! restored with etcdutl, and a real etcd started on it has the key put
//! before.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use super::*;
use crate::app::AppState;
use crate::clock::Timestamp;
use crate::ids::Id;
use crate::talos::etcd_snapshot::{gateway, sealed, verified};
use crate::talos::kube_api;
use crate::talos::kube_api::version::KubernetesVersion;
use crate::talos::kube_control_plane::etcd_member::{MemberFiles, Ports};
use crate::talos::kube_control_plane::files::Layout;
use crate::talos::kube_control_plane::process::Component;
use crate::talos::kube_control_plane::restore::{self, RestoreError};
use crate::talos::kube_control_plane::start;
use crate::talos::kube_control_plane::{KubeBinaries, Status, spec};
use crate::talos::testing::{Lab, cluster, control_plane, peer};

/// A control plane of a new cluster whose Kubernetes release is the real
/// components', bootstrapped from `snapshot` (hash checked) and founded,
/// served from a world built an hour ago; its ring's store id, and that
/// release.
fn recovered(snapshot: &[u8]) -> (AppState, Id, String, String) {
    let hour_ago = Timestamp::from_millis(Timestamp::now().millis() - 3_600_000);
    let mut lab = Lab::starting_at(hour_ago);
    let config = cluster().machine_config(&control_plane());
    let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
    lab.settle();
    let parsed = lab.talos(cp).node.config().unwrap().clone();
    let release =
        KubernetesVersion::of(parsed.kubernetes_version.as_deref(), &parsed.installs).git_version;
    lab.on(cp, |w, at, _| keep(w, at, snapshot.to_vec()))
        .unwrap();
    lab.on(cp, |w, at, _| bootstrap(w, at, false, Some(&release)))
        .unwrap();
    lab.settle();
    let ring = lab.talos(cp).node.disk.etcd.member.as_ref().unwrap().ring;
    let store = store_id(&parsed.cluster, ring);
    let shared = crate::app::Shared::new(
        lab.world,
        "token".into(),
        crate::ratelimit::RateLimiter::per_hour(3600),
        crate::faults::RouteFaults::new(Vec::new(), None),
    );
    (std::sync::Arc::new(shared), cp, store, release)
}

fn binaries(release: &str, work: &std::path::Path, etcdutl: Option<PathBuf>) -> KubeBinaries {
    let none = PathBuf::from("/nonexistent");
    KubeBinaries {
        etcd: peer("ETCD").unwrap_or_else(|| none.clone()),
        kube_apiserver: none.clone(),
        kube_controller_manager: none,
        csr_approver: None,
        hcloud_ccm: None,
        etcdutl,
        version: release.to_string(),
        work_dir: work.to_path_buf(),
    }
}

#[tokio::test]
async fn a_real_ring_recovering_without_etcdutl_fails_with_the_reason() {
    let mut db = vec![0_u8; 4096];
    db[16..20].copy_from_slice(&BBOLT_MAGIC.to_le_bytes());
    let (sim, _, store, release) = recovered(&sealed(db));
    let work = tempfile::tempdir().unwrap();
    let wanted = {
        let world = sim.world();
        let apis = world
            .servers
            .values()
            .filter_map(|s| Some((s.id, kube_api::spec(&world, s)?)))
            .collect();
        spec::wanted(&world, &release, &apis)
    };
    let spec = wanted[&store].clone();
    let (_names, watched) = tokio::sync::watch::channel(spec.names.clone());
    let run = start::run(
        sim.clone(),
        binaries(&release, work.path(), None),
        spec,
        watched,
    );
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("gives up at once");
    let Some(Status::Failed(why)) = sim.control_planes.get(&store) else {
        panic!("{:?}", sim.control_planes.get(&store));
    };
    assert_eq!(why, RestoreError::NoEtcdutl.to_string());
    assert!(why.contains("no etcdutl"), "{why}");
}

/// Waits until the etcd at `addr` says it is healthy.
async fn healthy(http: &reqwest::Client, addr: SocketAddr, etcd: &mut Component) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        etcd.check().unwrap();
        let health = http.get(format!("http://{addr}/health")).send().await;
        if let Ok(answer) = health
            && answer.text().await.is_ok_and(|t| t.contains("\"true\""))
        {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "etcd never healthy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts `member`, a real etcd, alone; its client address.
async fn start_etcd(
    binary: &std::path::Path,
    layout: &Layout,
    member: &MemberFiles,
) -> (Component, SocketAddr) {
    std::fs::create_dir_all(&layout.dir).unwrap();
    let mut etcd = Component::spawn(
        "etcd",
        binary,
        &member.args(&member.alone(), "new"),
        &layout.dir,
    )
    .unwrap();
    let addr = member.client();
    healthy(&gateway::client().unwrap(), addr, &mut etcd).await;
    (etcd, addr)
}

/// What the etcd at `addr` answers for `KEY` (its JSON gateway's range).
async fn range(http: &reqwest::Client, addr: SocketAddr) -> Value {
    let body = format!(r#"{{"key":"{}"}}"#, BASE64.encode(KEY));
    let answer = http
        .post(format!("http://{addr}/v3/kv/range"))
        .body(body)
        .send()
        .await
        .unwrap();
    serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap()
}

/// A member of the ring of `layout` at free ports.
fn member(layout: &Layout) -> MemberFiles {
    MemberFiles::of(layout, "cp-1-1", Ports::free().unwrap())
}

const KEY: &str = "hct-sim-recovered-key";
const VALUE: &str = "hct-sim-recovered-value";

#[tokio::test]
async fn a_real_etcd_comes_back_from_its_snapshot_restored_with_etcdutl() {
    let (Some(etcd), Some(etcdutl)) = (peer("ETCD"), peer("ETCDUTL")) else {
        eprintln!(
            "SKIPPED: no real etcd and etcdutl (set HCT_PEERS_ENV to scripts/ensure-peers' output)"
        );
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let http = gateway::client().unwrap();
    let old = Layout::of(work.path(), "old");
    let (process, addr) = start_etcd(&etcd, &old, &member(&old)).await;
    let put = format!(
        r#"{{"key":"{}","value":"{}"}}"#,
        BASE64.encode(KEY),
        BASE64.encode(VALUE)
    );
    let answer = http
        .post(format!("http://{addr}/v3/kv/put"))
        .body(put)
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
    let snapshot = verified(gateway::snapshot(addr).await.unwrap()).unwrap();
    drop(process);

    // Uploaded to a new control plane, bootstrapped from, restored before
    // its ring's etcd starts: the snapshot then leaves the node's disk.
    let (sim, cp, store, release) = recovered(&snapshot);
    let layout = Layout::of(work.path(), &store);
    let founder = member(&layout);
    let given = binaries(&release, work.path(), Some(etcdutl.clone()));
    restore::if_pending(&sim, &given, &store, &layout, &founder)
        .await
        .unwrap();
    assert!(founder.data.join("member").is_dir());
    let disk = sim.world().servers[&cp]
        .talos
        .as_ref()
        .unwrap()
        .node
        .disk
        .clone();
    assert_eq!((disk.etcd_snapshot, disk.etcd.recovery), (None, None));

    let (restored, addr) = start_etcd(&etcd, &layout, &founder).await;
    let answer = range(&http, addr).await;
    let value = answer["kvs"][0]["value"].as_str().unwrap_or_default();
    assert_eq!(BASE64.decode(value).unwrap(), VALUE.as_bytes(), "{answer}");
    drop(restored);

    // etcdutl checks the hash too (unless told not to), and a restore that
    // fails leaves no data directory.
    let mut torn = snapshot.clone();
    *torn.last_mut().unwrap() ^= 1;
    let third = Layout::of(work.path(), "torn");
    let torn_member = member(&third);
    let refused = restore::restore(&etcdutl, &torn, &third, &torn_member, false)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("expected sha256"), "{refused}");
    assert!(!torn_member.data.exists());
    restore::restore(&etcdutl, &torn, &third, &torn_member, true)
        .await
        .unwrap();
    // (Held: a component dropped is killed.)
    let (_unchecked, addr) = start_etcd(&etcd, &third, &torn_member).await;
    let answer = range(&http, addr).await;
    assert_eq!(answer["count"], "1", "{answer}");
}
