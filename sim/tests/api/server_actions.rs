//! Server actions as Hetzner's acceptance tests use them: an ISO attached
//! and swapped, backups turned on and off, a stopped server added to a
//! placement group (which brings it up), and a subnet that still has servers
//! refused with the `service_error` the provider retries on.

use crate::common::{call, settle, sim};

use hct_sim::SimHandle;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn server(sim: &SimHandle, body: Value) -> i64 {
    let (status, created) = call(sim, Method::POST, "/servers", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    settle(sim).await;
    created["server"]["id"].as_i64().unwrap()
}

async fn act(sim: &SimHandle, id: i64, action: &str, body: Value) -> Value {
    let path = format!("/servers/{id}/actions/{action}");
    let (status, answer) = call(sim, Method::POST, &path, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{action}: {answer}");
    assert!(answer["action"]["command"].is_string(), "{answer}");
    settle(sim).await;
    let (_, shown) = call(sim, Method::GET, &format!("/servers/{id}"), None).await;
    shown["server"].clone()
}

#[tokio::test]
async fn isos_are_attached_swapped_and_detached() {
    let sim = sim().await;
    let (status, isos) = call(&sim, Method::GET, "/isos?architecture=x86", None).await;
    assert_eq!(status, StatusCode::OK, "{isos}");
    assert_eq!(isos["isos"][0]["id"], 8637);
    let (_, arm) = call(&sim, Method::GET, "/isos?architecture=arm", None).await;
    assert_eq!(arm["isos"], json!([]));
    let (status, iso) = call(&sim, Method::GET, "/isos/8638", None).await;
    assert_eq!(status, StatusCode::OK, "{iso}");
    assert_eq!(iso["iso"]["type"], "public");

    let id = server(
        &sim,
        json!({"name": "iso", "server_type": "cpx12", "image": "debian-12"}),
    )
    .await;
    let path = format!("/servers/{id}/actions/attach_iso");
    let (_, answer) = call(&sim, Method::POST, &path, Some(json!({"iso": "8637"}))).await;
    assert_eq!(answer["action"]["command"], "attach_iso");
    settle(&sim).await;
    let (_, shown) = call(&sim, Method::GET, &format!("/servers/{id}"), None).await;
    let shown = &shown["server"];
    assert_eq!(shown["iso"]["id"], 8637);
    let shown = act(&sim, id, "detach_iso", json!({})).await;
    assert!(shown["iso"].is_null());
    let name = iso["iso"]["name"].clone();
    let shown = act(&sim, id, "attach_iso", json!({"iso": name})).await;
    assert_eq!(shown["iso"]["id"], 8638);

    let (status, refused) = call(&sim, Method::POST, &path, Some(json!({"iso": "nope"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    let arm = server(
        &sim,
        json!({"name": "arm", "server_type": "cax11", "image": "debian-12"}),
    )
    .await;
    let path = format!("/servers/{arm}/actions/attach_iso");
    let (status, refused) = call(&sim, Method::POST, &path, Some(json!({"iso": 8637}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
}

#[tokio::test]
async fn backups_are_turned_on_and_off() {
    let sim = sim().await;
    let id = server(
        &sim,
        json!({"name": "backed-up", "server_type": "cpx12", "image": "debian-12"}),
    )
    .await;
    let (_, shown) = call(&sim, Method::GET, &format!("/servers/{id}"), None).await;
    assert!(shown["server"]["backup_window"].is_null());
    let shown = act(&sim, id, "enable_backup", json!({})).await;
    assert!(shown["backup_window"].is_string());
    let shown = act(&sim, id, "disable_backup", json!({})).await;
    assert!(shown["backup_window"].is_null());
}

#[tokio::test]
async fn a_stopped_server_added_to_a_placement_group_comes_up() {
    let sim = sim().await;
    let (status, group) = call(
        &sim,
        Method::POST,
        "/placement_groups",
        Some(json!({"name": "spread", "type": "spread"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{group}");
    let group = group["placement_group"]["id"].as_i64().unwrap();
    let id = server(
        &sim,
        json!({"name": "placed", "server_type": "cpx12", "image": "debian-12"}),
    )
    .await;
    let path = format!("/servers/{id}/actions/add_to_placement_group");
    let body = json!({"placement_group": group});
    let (status, refused) = call(&sim, Method::POST, &path, Some(body.clone())).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "server_not_stopped");

    let shown = act(&sim, id, "poweroff", json!({})).await;
    assert_eq!(shown["status"], "off");
    let shown = act(&sim, id, "add_to_placement_group", body).await;
    assert_eq!(shown["status"], "running");
    assert_eq!(shown["placement_group"]["id"], group);
    let shown = act(&sim, id, "poweroff", json!({})).await;
    assert_eq!(shown["status"], "off");
    let shown = act(&sim, id, "remove_from_placement_group", json!({})).await;
    assert_eq!(shown["status"], "off");
    assert!(shown["placement_group"].is_null());
}

#[tokio::test]
async fn a_subnet_with_servers_is_not_deleted() {
    let sim = sim().await;
    let (status, network) = call(
        &sim,
        Method::POST,
        "/networks",
        Some(json!({
            "name": "net", "ip_range": "10.0.0.0/16",
            "subnets": [{"type": "cloud", "network_zone": "eu-central", "ip_range": "10.0.1.0/24"}],
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{network}");
    let network = network["network"]["id"].as_i64().unwrap();
    let id = server(
        &sim,
        json!({"name": "member", "server_type": "cpx12", "image": "debian-12", "networks": [network]}),
    )
    .await;
    let path = format!("/networks/{network}/actions/delete_subnet");
    let body = json!({"ip_range": "10.0.1.0/24"});
    let (status, refused) = call(&sim, Method::POST, &path, Some(body.clone())).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "service_error");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("servers are attached"), "{message}");

    let (status, _) = call(&sim, Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    settle(&sim).await;
    let (status, answer) = call(&sim, Method::POST, &path, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}
