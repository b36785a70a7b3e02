//! A snapshot whose answer is lost is never made twice: hct's Hetzner client
//! sends `create_image` once, and when the answer does not come it looks for
//! the snapshot (its labels, made from this server) before it asks again.
//! Against hct-sim, with the answer lost after Hetzner did the work, and
//! before.

use crate::support;

use std::time::Duration;

use hct::hcloud::models::Labels;
use hct::hcloud::{Client, PrivateServer};
use hct_sim::{FaultSpec, SimHandle};
use support::sim::{client, private_server, seeded_network, start as sim};

const TIMEOUT: Duration = Duration::from_secs(60);
const CREATE_IMAGE: &str = "POST /servers/{id}/actions/create_image";

fn labels() -> Labels {
    support::sim::labels(&[("managed-by", "hct"), ("talos-version", "v1.13.2")])
}

/// A stopped server to snapshot.
async fn stopped_server(sim: &SimHandle, client: &Client, name: &str, ip: &str) -> i64 {
    let spec = PrivateServer {
        labels: labels(),
        user_data: None,
        ..private_server(seeded_network(sim), name, ip)
    };
    let server = client
        .create_private_server(&spec, TIMEOUT, |_| {})
        .await
        .unwrap();
    let action = client.power_off(server.id).await.unwrap();
    client.wait_for_action(action, name, TIMEOUT).await.unwrap();
    server.id
}

fn snapshots_from(sim: &SimHandle, server: i64) -> Vec<i64> {
    sim.inspect(|w| {
        w.images
            .values()
            .filter(|i| i.created_from.as_ref().map(|c| c.id) == Some(server))
            .map(|i| i.id)
            .collect()
    })
}

fn lose_answer(sim: &SimHandle, after_handling: bool) {
    sim.add_fault(
        FaultSpec::parse(&format!(
            r#"{{"route": "{CREATE_IMAGE}", "respond": "timeout", "count": 1,
                "after_handling": {after_handling}}}"#
        ))
        .unwrap(),
    );
}

#[tokio::test]
async fn a_snapshot_made_although_its_answer_was_lost_is_taken_not_made_again() {
    let sim = sim().await;
    let client = client(&sim);
    let server = stopped_server(&sim, &client, "build-1", "10.0.128.70").await;
    lose_answer(&sim, true);
    let (image, action) = client
        .create_snapshot(server, "talos", &labels())
        .await
        .unwrap();
    assert!(action.is_none(), "the snapshot was found, not answered");
    let ready = client
        .wait_for_image(image.id, "build-1", TIMEOUT)
        .await
        .unwrap();
    assert_eq!(ready.status, "available");
    assert_eq!(snapshots_from(&sim, server), vec![image.id]);
    assert_eq!(
        support::sim::requests_of(&sim, CREATE_IMAGE),
        1,
        "sent once"
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_snapshot_request_lost_before_hetzner_saw_it_is_sent_again() {
    let sim = sim().await;
    let client = client(&sim);
    let server = stopped_server(&sim, &client, "build-2", "10.0.128.71").await;
    lose_answer(&sim, false);
    let (image, action) = client
        .create_snapshot(server, "talos", &labels())
        .await
        .unwrap();
    let action = action.expect("the second request was answered");
    client
        .wait_for_action(action, "build-2", TIMEOUT)
        .await
        .unwrap();
    assert_eq!(snapshots_from(&sim, server), vec![image.id]);
    assert_eq!(support::sim::requests_of(&sim, CREATE_IMAGE), 2);
    sim.shutdown().await.unwrap();
}
