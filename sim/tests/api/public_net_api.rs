//! Firewalls and Primary IPs over HTTP, in the shapes Hetzner's clients
//! send: nested `apply_to`/`remove_from` resources, `firewalls` and
//! `public_net.ipv4` in `POST /servers`, the actions they answer with, and
//! the errors of each operation; label selectors in `apply_to`, and
//! finding a Primary IP by its address.

use crate::common;

use common::{call, settle, sim};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn firewalls_are_applied_by_server_creation_and_their_own_actions() {
    let sim = sim().await;
    let (status, created) = call(
        &sim,
        Method::POST,
        "/firewalls",
        Some(json!({
            "name": "nat",
            "labels": {"cluster": "c"},
            "rules": [{"direction": "in", "protocol": "icmp", "source_ips": ["::/0", "0.0.0.0/0"]}],
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let fw = created["firewall"]["id"].as_i64().unwrap();
    assert_eq!(created["actions"][0]["command"], "set_firewall_rules");
    assert_eq!(created["firewall"]["rules"][0]["port"], json!(null));

    let (status, server) = call(
        &sim,
        Method::POST,
        "/servers",
        Some(json!({
            "name": "nat", "server_type": "cx23", "image": "debian-12", "location": "nbg1",
            "firewalls": [{"firewall": fw}],
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{server}");
    let id = server["server"]["id"].as_i64().unwrap();
    let commands: Vec<&str> = server["next_actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["command"].as_str())
        .collect();
    assert_eq!(commands, ["apply_firewall", "start_server"]);
    assert_eq!(
        server["server"]["public_net"]["firewalls"],
        json!([{"id": fw, "status": "applied"}])
    );

    settle(&sim).await;
    let (status, _) = call(
        &sim,
        Method::POST,
        &format!("/firewalls/{fw}/actions/set_rules"),
        Some(
            json!({"rules": [{"direction": "in", "protocol": "tcp", "source_ips": ["0.0.0.0/0"]}]}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "tcp without a port");
    let (status, answer) = call(
        &sim,
        Method::POST,
        &format!("/firewalls/{fw}/actions/apply_to_resources"),
        Some(json!({"apply_to": [{"type": "server", "server": {"id": id}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["error"]["code"], "firewall_already_applied");

    let (status, answer) = call(&sim, Method::DELETE, &format!("/firewalls/{fw}"), None).await;
    assert_eq!(answer["error"]["code"], "resource_in_use", "{status}");
    let (status, answer) = call(
        &sim,
        Method::POST,
        &format!("/firewalls/{fw}/actions/remove_from_resources"),
        Some(json!({"remove_from": [{"type": "server", "server": {"id": id}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["actions"][0]["command"], "remove_firewall");
    let (_, listed) = call(&sim, Method::GET, "/firewalls?name=nat", None).await;
    assert_eq!(listed["firewalls"][0]["applied_to"], json!([]));
    let (status, _) = call(&sim, Method::DELETE, &format!("/firewalls/{fw}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn a_primary_ip_is_created_alone_used_by_a_server_and_outlives_it() {
    let sim = sim().await;
    let (status, answer) = call(
        &sim,
        Method::POST,
        "/primary_ips",
        Some(json!({"name": "egress", "type": "ipv4", "location": "nbg1", "assignee_id": 1, "assignee_type": "server"})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "location and assignee_id: {answer}"
    );
    // As hcloud-go sends it: no assignee_type without an assignee.
    let (status, created) = call(
        &sim,
        Method::POST,
        "/primary_ips",
        Some(json!({"name": "egress", "type": "ipv4", "location": "nbg1", "auto_delete": false})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let ip = created["primary_ip"]["id"].as_i64().unwrap();
    let address = created["primary_ip"]["ip"].as_str().unwrap().to_string();
    assert_eq!(created["primary_ip"]["assignee_id"], json!(null));
    assert_eq!(created["primary_ip"]["location"]["name"], "nbg1");
    assert!(created["primary_ip"].get("datacenter").is_none());

    let (status, server) = call(
        &sim,
        Method::POST,
        "/servers",
        Some(json!({
            "name": "nat", "server_type": "cx23", "image": "debian-12", "location": "nbg1",
            "public_net": {"enable_ipv4": true, "ipv4": ip, "enable_ipv6": false},
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{server}");
    let id = server["server"]["id"].as_i64().unwrap();
    assert_eq!(server["server"]["public_net"]["ipv4"]["id"], ip);
    assert_eq!(server["server"]["public_net"]["ipv4"]["ip"], address);
    assert_eq!(server["server"]["public_net"]["ipv6"], json!(null));

    settle(&sim).await;
    let (status, answer) = call(&sim, Method::DELETE, &format!("/primary_ips/{ip}"), None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["error"]["code"], "must_be_unassigned");
    let (_, answer) = call(
        &sim,
        Method::POST,
        &format!("/primary_ips/{ip}/actions/unassign"),
        None,
    )
    .await;
    assert_eq!(answer["error"]["code"], "server_not_stopped");

    let (status, _) = call(&sim, Method::DELETE, &format!("/servers/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    settle(&sim).await;
    assert!(sim.inspect(|w| {
        w.servers
            .values()
            .all(|s| hct_sim::seed::is_seeded(&s.labels))
    }));
    let (_, listed) = call(
        &sim,
        Method::GET,
        &format!("/primary_ips?ip={address}"),
        None,
    )
    .await;
    assert_eq!(listed["primary_ips"][0]["id"], ip);
    assert_eq!(listed["primary_ips"][0]["assignee_id"], json!(null));
    let (status, _) = call(&sim, Method::DELETE, &format!("/primary_ips/{ip}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn a_firewall_applied_through_a_label_selector_shows_the_servers_it_selects() {
    let sim = sim().await;
    let (status, answer) = call(
        &sim,
        Method::POST,
        "/firewalls",
        Some(json!({
            "name": "bad",
            "apply_to": [{"type": "label_selector", "label_selector": {"selector": "role in (web"}}],
        })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_input");

    let (status, created) = call(
        &sim,
        Method::POST,
        "/firewalls",
        Some(json!({
            "name": "web",
            "rules": [{"direction": "in", "protocol": "udp", "port": "any", "source_ips": ["0.0.0.0/0"]}],
            "apply_to": [{"type": "label_selector", "label_selector": {"selector": "role=web"}}],
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let fw = created["firewall"]["id"].as_i64().unwrap();
    assert_eq!(created["firewall"]["rules"][0]["port"], "any");
    let commands: Vec<&str> = created["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["command"].as_str())
        .collect();
    assert_eq!(commands, ["set_firewall_rules", "apply_firewall"]);

    // A server created afterwards with matching labels is covered.
    let (status, server) = call(
        &sim,
        Method::POST,
        "/servers",
        Some(json!({
            "name": "web", "server_type": "cx23", "image": "debian-12", "location": "nbg1",
            "labels": {"role": "web"},
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{server}");
    let id = server["server"]["id"].as_i64().unwrap();
    assert_eq!(
        server["server"]["public_net"]["firewalls"],
        json!([{"id": fw, "status": "applied"}])
    );
    let (_, firewall) = call(&sim, Method::GET, &format!("/firewalls/{fw}"), None).await;
    assert_eq!(
        firewall["firewall"]["applied_to"],
        json!([{
            "type": "label_selector",
            "label_selector": {"selector": "role=web"},
            "applied_to_resources": [{"type": "server", "server": {"id": id}}],
        }])
    );

    settle(&sim).await;
    let (status, answer) = call(&sim, Method::DELETE, &format!("/firewalls/{fw}"), None).await;
    assert_eq!(answer["error"]["code"], "resource_in_use", "{status}");
    let selector = json!([{"type": "label_selector", "label_selector": {"selector": "role=web"}}]);
    let (status, answer) = call(
        &sim,
        Method::POST,
        &format!("/firewalls/{fw}/actions/remove_from_resources"),
        Some(json!({"remove_from": selector})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["actions"][0]["command"], "remove_firewall");
    let (_, server) = call(&sim, Method::GET, &format!("/servers/{id}"), None).await;
    assert_eq!(server["server"]["public_net"]["firewalls"], json!([]));
    settle(&sim).await;
    let (status, _) = call(&sim, Method::DELETE, &format!("/firewalls/{fw}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn an_ipv6_primary_ip_is_found_by_the_address_of_its_network() {
    let sim = sim().await;
    let (status, created) = call(
        &sim,
        Method::POST,
        "/primary_ips",
        Some(json!({"name": "v6", "type": "ipv6", "location": "nbg1", "auto_delete": false})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["primary_ip"]["id"].as_i64().unwrap();
    let network = created["primary_ip"]["ip"].as_str().unwrap().to_string();
    let address = network.strip_suffix("/64").unwrap().to_string();
    for wanted in [address.as_str(), network.as_str()] {
        let (_, listed) = call(
            &sim,
            Method::GET,
            &format!("/primary_ips?ip={}", wanted.replace('/', "%2F")),
            None,
        )
        .await;
        assert_eq!(listed["primary_ips"][0]["id"], id, "{wanted}: {listed}");
        assert_eq!(listed["primary_ips"].as_array().map(Vec::len), Some(1));
    }
}
