//! Delete protection of networks and servers (`change_protection`), as
//! Hetzner's API documents it: set by an action, shown under `protection`,
//! and a protected resource's delete refused with `protected`. A server's
//! delete and rebuild protection take the same value only.

use crate::common::{call, sim};

use hct_sim::SimHandle;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The call, sent again while a running action holds the resource (`locked`;
/// `conflict` for networks), not while it is `protected`.
async fn unlocked(
    sim: &SimHandle,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    for _ in 0..100 {
        let answer = call(sim, method.clone(), path, body.clone()).await;
        let code = &answer.1["error"]["code"];
        if code != "locked" && code != "conflict" {
            return answer;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{path} stayed locked");
}

#[tokio::test]
async fn protected_networks_and_servers_are_not_deleted() {
    let sim = sim().await;
    let (status, network) = call(
        &sim,
        Method::POST,
        "/networks",
        Some(json!({"name": "kept", "ip_range": "10.1.0.0/16"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{network}");
    let network = network["network"]["id"].as_i64().unwrap();
    let path = format!("/networks/{network}/actions/change_protection");
    let (status, answer) = call(&sim, Method::POST, &path, Some(json!({"delete": true}))).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["action"]["command"], "change_protection");
    let (_, shown) = call(&sim, Method::GET, &format!("/networks/{network}"), None).await;
    assert_eq!(shown["network"]["protection"]["delete"], true);
    let (status, refused) =
        unlocked(&sim, Method::DELETE, &format!("/networks/{network}"), None).await;
    assert_eq!(status, StatusCode::LOCKED, "{refused}");
    assert_eq!(refused["error"]["code"], "protected");
    let (status, answer) =
        unlocked(&sim, Method::POST, &path, Some(json!({"delete": false}))).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (status, answer) =
        unlocked(&sim, Method::DELETE, &format!("/networks/{network}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{answer}");

    let (status, server) = call(
        &sim,
        Method::POST,
        "/servers",
        Some(json!({"name": "kept", "server_type": "cx23", "image": "debian-12", "location": "nbg1"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{server}");
    let server = server["server"]["id"].as_i64().unwrap();
    let path = format!("/servers/{server}/actions/change_protection");
    let answer = unlocked(
        &sim,
        Method::POST,
        &path,
        Some(json!({"delete": true, "rebuild": false})),
    )
    .await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{}", answer.1);
    assert_eq!(answer.1["error"]["code"], "invalid_input");
    let (status, answer) = unlocked(
        &sim,
        Method::POST,
        &path,
        Some(json!({"delete": true, "rebuild": true})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (_, shown) = call(&sim, Method::GET, &format!("/servers/{server}"), None).await;
    assert_eq!(
        shown["server"]["protection"],
        json!({"delete": true, "rebuild": true})
    );
    let (status, refused) =
        unlocked(&sim, Method::DELETE, &format!("/servers/{server}"), None).await;
    assert_eq!(status, StatusCode::LOCKED, "{refused}");
    assert_eq!(refused["error"]["code"], "protected");
}
