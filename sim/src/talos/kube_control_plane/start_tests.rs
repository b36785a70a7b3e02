//! When a real control plane's pass comes: every couple of seconds, and
//! at once when the emulation's etcd members of its cluster change.

use super::*;

fn members(cluster: &str) -> SimEvent {
    SimEvent::EtcdMembers {
        cluster: cluster.into(),
        members: vec![("cp-1".into(), false)],
    }
}

async fn wakes(events: &mut broadcast::Receiver<SimEvent>) -> bool {
    tokio::time::timeout(Duration::from_millis(50), members_changed(events, "c1"))
        .await
        .is_ok()
}

#[tokio::test]
async fn a_pass_comes_at_once_when_the_clusters_etcd_members_change() {
    let (sender, mut events) = broadcast::channel(4);
    assert!(!wakes(&mut events).await, "nothing happened");
    sender.send(SimEvent::ServerStopped { server: 7 }).unwrap();
    sender.send(members("c2")).unwrap();
    assert!(!wakes(&mut events).await, "another cluster's, or no etcd");
    sender.send(members("c1")).unwrap();
    assert!(wakes(&mut events).await, "its members changed");
    // Fallen behind: one may have been missed.
    for _ in 0..5 {
        sender.send(SimEvent::ServerStopped { server: 7 }).unwrap();
    }
    assert!(wakes(&mut events).await, "lagged");
    drop(sender);
    assert!(
        !wakes(&mut events).await,
        "the sim is gone: the pass timer alone"
    );
}

#[tokio::test]
async fn a_pass_reads_what_was_said_before_it_so_that_wakes_no_other() {
    let (sender, mut events) = broadcast::channel(2);
    sender.send(members("c1")).unwrap();
    for _ in 0..3 {
        sender.send(SimEvent::ServerStopped { server: 7 }).unwrap();
    }
    said_so_far(&mut events);
    assert!(
        !wakes(&mut events).await,
        "said before the pass read the world"
    );
    sender.send(members("c1")).unwrap();
    assert!(wakes(&mut events).await, "said after");
}
