//! A ring of real etcd members (the `ETCD=` line of `HCT_PEERS_ENV`,
//! `scripts/ensure-peers`' output; skipped, saying so, without it) kept in
//! line with the members the emulation lists: joins and removals are
//! etcd's own, and so is the quorum they need.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::*;
use crate::talos::etcd_snapshot::gateway;
use crate::talos::kube_control_plane::etcd_member::member_name;

fn wanted(members: &[(&str, bool)]) -> Vec<Wanted> {
    members
        .iter()
        .map(|(name, up)| Wanted {
            name: name.to_string(),
            up: *up,
        })
        .collect()
}

/// Reconciles `ring` with `members` until `done` says so of the members
/// etcd lists (by name, sorted; a learner as "name (learner)"); the last
/// problems.
async fn settle(
    ring: &mut EtcdRing,
    members: &[(&str, bool)],
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        ring.check().unwrap();
        let problems = ring.reconcile(&wanted(members), None).await.unwrap();
        if let Ok(listed) = ring.members().await {
            let mut names: Vec<String> = listed
                .iter()
                .map(|m| match m.is_learner {
                    true => format!("{} (learner)", m.name),
                    false => m.name.clone(),
                })
                .collect();
            names.sort();
            if done(&names) {
                return problems;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ring never settled for {members:?}: {problems:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn healthy_within(ring: &EtcdRing, wait: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    while tokio::time::Instant::now() < deadline {
        if ring.healthy().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

async fn put(ring: &EtcdRing, key: &str, value: &str) {
    let body = format!(
        r#"{{"key":"{}","value":"{}"}}"#,
        BASE64.encode(key),
        BASE64.encode(value)
    );
    let answer = gateway::client()
        .unwrap()
        .post(format!("http://{}/v3/kv/put", ring.front()))
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{answer:?}");
}

async fn get(ring: &EtcdRing, key: &str) -> Option<String> {
    let body = format!(r#"{{"key":"{}"}}"#, BASE64.encode(key));
    let answer = gateway::client()
        .unwrap()
        .post(format!("http://{}/v3/kv/range", ring.front()))
        .body(body)
        .send()
        .await
        .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&answer.bytes().await.ok()?).ok()?;
    let encoded = value["kvs"][0]["value"].as_str()?;
    String::from_utf8(BASE64.decode(encoded).ok()?).ok()
}

/// Real etcd's binary and a ring's files in a new directory (kept while
/// the first is); None, saying so, without the peers.
fn real_ring_files(store: &str) -> Option<(tempfile::TempDir, std::path::PathBuf, Layout)> {
    let Some(binary) = crate::talos::testing::peer("ETCD") else {
        eprintln!("SKIPPED: no real etcd (set HCT_PEERS_ENV to scripts/ensure-peers' output)");
        return None;
    };
    let work = tempfile::tempdir().unwrap();
    let layout = Layout::of(work.path(), &format!("lab/{store}"));
    Some((work, binary, layout))
}

fn all_of(names: &[&str]) -> impl Fn(&[String]) -> bool {
    let wanted: Vec<String> = names.iter().map(ToString::to_string).collect();
    move |listed| listed == wanted.as_slice()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_leave_and_stop_as_etcd_allows() {
    let Some((_work, binary, layout)) = real_ring_files("0000000000000001") else {
        return;
    };
    let mut ring = EtcdRing::open(&binary, &layout).unwrap();

    // The founder starts a cluster of its own; the others join one at a
    // time, each through a running voter, as learners that are promoted
    // once they caught up.
    settle(&mut ring, &[("a", true)], all_of(&["a"])).await;
    assert!(healthy_within(&ring, Duration::from_secs(30)).await);
    put(&ring, "k", "v1").await;
    // Just added, b has not started: as a learner it does not count, so a
    // alone keeps the quorum (a voter added the same way would leave one
    // of two started, and no quorum until b caught up).
    ring.reconcile(&wanted(&[("a", true), ("b", true)]), None)
        .await
        .unwrap();
    let b_url = MemberFiles::of(&layout, "b", ring.ports["b"]).peer_url();
    let listed = ring.members().await.unwrap();
    let b = listed.iter().find(|m| m.peer_urls.contains(&b_url));
    assert!(b.is_some_and(|b| b.is_learner), "{listed:?}");
    let front = ring.front.targets();
    let client = |name: &str| MemberFiles::of(&layout, name, ring.ports[name]).client();
    assert_eq!(front, [client("a")], "the front passes b nothing");
    assert!(ring.healthy().await, "a keeps the quorum while b joins");
    let three = [("a", true), ("b", true), ("c", true)];
    settle(&mut ring, &three, all_of(&["a", "b", "c"])).await;
    assert!(healthy_within(&ring, Duration::from_secs(30)).await);

    // A node down: its member stops, stays listed, and two of three keep
    // the quorum.
    let c_down = [("a", true), ("b", true), ("c", false)];
    settle(&mut ring, &c_down, all_of(&["a", "b", "c"])).await;
    assert!(!ring.running.contains_key("c"), "c's process is stopped");
    assert!(healthy_within(&ring, Duration::from_secs(30)).await);
    put(&ring, "k", "v2").await;

    // Two down of three: no quorum, as etcd itself says; a removal then
    // is refused and tried again, and nothing is lost meanwhile.
    let one_up = [("a", true), ("b", false), ("c", false)];
    ring.reconcile(&wanted(&one_up), None).await.unwrap();
    assert!(!healthy_within(&ring, Duration::from_secs(5)).await);
    let problems = ring
        .reconcile(&wanted(&[("a", true), ("b", false)]), None)
        .await
        .unwrap();
    assert!(
        problems.iter().any(|p| p.starts_with("removing member c:")),
        "{problems:?}"
    );
    assert!(MemberFiles::of(&layout, "c", ring.ports["c"]).has_data());

    // Back up: c rejoins as itself, with what was written while it was
    // down.
    settle(&mut ring, &three, all_of(&["a", "b", "c"])).await;
    assert!(healthy_within(&ring, Duration::from_secs(30)).await);
    assert_eq!(get(&ring, "k").await.as_deref(), Some("v2"));

    // b and c leave at once, just after c came back. etcd lets a voting
    // member go only once the rest has been connected a while (its health
    // interval), so they keep running until it does: stopped first, they
    // would take a's quorum with them. Then their data goes.
    let leaving: Vec<MemberFiles> = ["b", "c"]
        .iter()
        .map(|name| MemberFiles::of(&layout, name, ring.ports[*name]))
        .collect();
    settle(&mut ring, &[("a", true)], all_of(&["a"])).await;
    assert!(healthy_within(&ring, Duration::from_secs(30)).await);
    assert!(
        leaving.iter().all(|m| !m.data.exists()),
        "their data is deleted"
    );
    assert_eq!(ring.ports.keys().collect::<Vec<_>>(), ["a"]);
    // A write: etcd syncs its log then, and with it that the removals were
    // committed. Killed before any, a could come back from its log as one
    // of two members (a commit index alone is written unsynced), as etcd
    // would on a machine that lost power.
    put(&ring, "k", "v3").await;

    // The ring restarted (its processes gone): the member comes back from
    // its data at the ports etcd knows it by, a voter as etcd lists it
    // (the front passes a learner nothing: the reads below would fail).
    let ports = ring.ports.clone();
    drop(ring);
    let mut ring = EtcdRing::open(&binary, &layout).unwrap();
    assert_eq!(ring.ports, ports);
    settle(&mut ring, &[("a", true)], all_of(&["a"])).await;
    assert!(healthy_within(&ring, Duration::from_secs(30)).await);
    assert_eq!(get(&ring, "k").await.as_deref(), Some("v3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_started_again_stays_out_of_the_front_until_promoted() {
    let Some((_work, binary, layout)) = real_ring_files("0000000000000003") else {
        return;
    };
    let mut ring = EtcdRing::open(&binary, &layout).unwrap();
    settle(&mut ring, &[("a", true)], all_of(&["a"])).await;
    put(&ring, "k", "v1").await;
    // b is added as a learner and started; the ring stops once etcd lists
    // it started, with no pass since that could have promoted it.
    let both = [("a", true), ("b", true)];
    ring.reconcile(&wanted(&both), None).await.unwrap();
    let b = MemberFiles::of(&layout, "b", ring.ports["b"]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let listed = ring.members().await.unwrap_or_default();
        if b.has_data() && listed.iter().any(|m| m.name == "b" && m.is_learner) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "b never started: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(ring);

    // Started again, the ring knows nothing of who is a learner: etcd
    // still lists b as one, and the front passes b nothing until it is
    // promoted.
    let mut ring = EtcdRing::open(&binary, &layout).unwrap();
    ring.reconcile(&wanted(&both), None).await.unwrap();
    let ports = ring.ports.clone();
    let client = |name: &str| MemberFiles::of(&layout, name, ports[name]).client();
    assert!(
        !ring.front.targets().contains(&client("b")),
        "{:?}",
        ring.front.targets()
    );
    settle(&mut ring, &both, all_of(&["a", "b"])).await;
    assert!(healthy_within(&ring, Duration::from_secs(30)).await);
    let mut front = ring.front.targets();
    front.sort();
    let mut voters = vec![client("a"), client("b")];
    voters.sort();
    assert_eq!(front, voters, "both voters, both in the front");
    assert_eq!(get(&ring, "k").await.as_deref(), Some("v1"));
}

#[tokio::test]
async fn a_member_to_be_waits_for_a_running_voter_to_join_through() {
    let work = tempfile::tempdir().unwrap();
    let layout = Layout::of(work.path(), "lab/0000000000000002");
    // A ring whose only member with data is down: the newcomer cannot
    // found a cluster of its own beside it.
    let a = MemberFiles::of(&layout, "a", Ports::free().unwrap());
    std::fs::create_dir_all(a.data.join("member")).unwrap();
    let mut ring = EtcdRing::open(Path::new("/nonexistent/etcd"), &layout).unwrap();
    ring.ports.insert("a".into(), a.ports);
    let problems = ring
        .reconcile(&wanted(&[("a", false), ("b", true)]), None)
        .await
        .unwrap();
    assert_eq!(
        problems,
        ["starting member b: no running voter to join through"]
    );
    assert!(ring.running.is_empty());
}

#[test]
fn a_node_joins_again_only_once_its_old_member_is_removed() {
    let leaving = vec![member_name("cp-2", 0xb), member_name("cp-10", 0xc)];
    assert_eq!(
        same_node(&leaving, &member_name("cp-2", 0xd)),
        Some(&leaving[0]),
        "cp-2's new member waits for its old one"
    );
    assert_eq!(same_node(&leaving, &member_name("cp-1", 0xe)), None);
    assert_eq!(same_node(&[], &member_name("cp-2", 0xd)), None);
}
