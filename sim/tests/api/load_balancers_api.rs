//! Load balancers' services and changes over HTTP, as Hetzner's API
//! answers them: HTTP services with their defaults and options, a listen
//! port from the protocol, `update_service`, service and target actions
//! that are done when answered, `change_type` and `change_algorithm`; and
//! a subnet kept while a load balancer (or a server) is in it.

use crate::common::{call, sim};

use hct_sim::SimHandle;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A load balancer of `kind` in nbg1, past its `create_load_balancer`.
async fn load_balancer(sim: &SimHandle, name: &str, kind: &str) -> i64 {
    let (status, created) = call(
        sim,
        Method::POST,
        "/load_balancers",
        Some(json!({"name": name, "load_balancer_type": kind, "location": "nbg1"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    finished(sim, &created["action"]).await;
    created["load_balancer"]["id"].as_i64().unwrap()
}

/// Waits until `action` is no longer running; its last view.
async fn finished(sim: &SimHandle, action: &Value) -> Value {
    let id = action["id"].as_i64().unwrap();
    for _ in 0..100 {
        let (_, shown) = call(sim, Method::GET, &format!("/actions/{id}"), None).await;
        if shown["action"]["status"] != "running" {
            return shown["action"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("action {id} kept running");
}

async fn act(sim: &SimHandle, lb: i64, action: &str, body: Value) -> (StatusCode, Value) {
    let path = format!("/load_balancers/{lb}/actions/{action}");
    call(sim, Method::POST, &path, Some(body)).await
}

async fn services(sim: &SimHandle, lb: i64) -> Vec<Value> {
    let (_, shown) = call(sim, Method::GET, &format!("/load_balancers/{lb}"), None).await;
    shown["load_balancer"]["services"]
        .as_array()
        .unwrap()
        .clone()
}

async fn service(sim: &SimHandle, lb: i64, listen_port: u16) -> Value {
    services(sim, lb)
        .await
        .into_iter()
        .find(|s| s["listen_port"] == listen_port)
        .unwrap_or_else(|| panic!("no service on {listen_port}"))
}

#[tokio::test]
async fn http_services_take_hetzners_defaults_and_options() {
    let sim = sim().await;
    let lb = load_balancer(&sim, "web", "lb11").await;
    let (status, answer) = act(&sim, lb, "add_service", json!({"protocol": "http"})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["action"]["command"], "add_service");
    assert_eq!(answer["action"]["status"], "success");
    let http = service(&sim, lb, 80).await;
    assert_eq!(http["protocol"], "http");
    assert_eq!(http["destination_port"], 80);
    assert_eq!(http["proxyprotocol"], false);
    assert_eq!(
        http["http"],
        json!({"cookie_name": "HCLBSTICKY", "cookie_lifetime": 300, "certificates": [],
               "redirect_http": false, "sticky_sessions": false, "timeout_idle": 60})
    );
    assert_eq!(http["health_check"]["protocol"], "http");
    assert_eq!(http["health_check"]["port"], 80);
    assert_eq!(http["health_check"]["http"]["path"], "/");
    assert_eq!(
        http["health_check"]["http"]["status_codes"],
        json!(["2??", "3??"])
    );

    // Done when answered: the next service goes in at once.
    let sticky = json!({
        "protocol": "http", "listen_port": 8080, "destination_port": 8081,
        "http": {"sticky_sessions": true, "cookie_name": "JAR", "cookie_lifetime": 1800},
        "health_check": {"protocol": "http", "port": 8081, "interval": 30, "timeout": 20,
                         "retries": 2, "http": {"domain": "example.com", "path": "/health",
                         "response": "OK", "status_codes": ["2??", "301"], "tls": false}},
    });
    let (status, answer) = act(&sim, lb, "add_service", sticky).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let sticky = service(&sim, lb, 8080).await;
    assert_eq!(sticky["http"]["sticky_sessions"], true);
    assert_eq!(sticky["http"]["cookie_name"], "JAR");
    assert_eq!(sticky["http"]["cookie_lifetime"], 1800);
    assert_eq!(sticky["health_check"]["interval"], 30);
    assert_eq!(sticky["health_check"]["http"]["domain"], "example.com");
    assert_eq!(sticky["health_check"]["http"]["response"], "OK");
    let tcp = service_check(&sim, lb, json!({"protocol": "tcp", "listen_port": 70})).await;
    assert_eq!(tcp, ("invalid_input".into(), StatusCode::BAD_REQUEST));

    for refused in [
        json!({"protocol": "tcp", "destination_port": 70}),
        json!({"protocol": "tcp", "listen_port": 70, "destination_port": 70, "http": {}}),
        json!({"protocol": "http", "listen_port": 81, "http": {"redirect_http": true}}),
        json!({"protocol": "http", "listen_port": 81, "http": {"timeout_idle": 10}}),
        json!({"protocol": "https"}),
        json!({"protocol": "udp", "listen_port": 81, "destination_port": 81}),
    ] {
        let answer = service_check(&sim, lb, refused.clone()).await;
        assert_eq!(answer.0, "invalid_input", "{refused}");
    }
    let answer = service_check(&sim, lb, json!({"protocol": "http"})).await;
    assert_eq!(answer.0, "source_port_already_used");
    let tcp = json!({"protocol": "tcp", "listen_port": 70, "destination_port": 70});
    let (status, answer) = act(&sim, lb, "add_service", tcp).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let tcp = service(&sim, lb, 70).await;
    assert_eq!(tcp["http"], Value::Null);
    assert_eq!(tcp["health_check"]["protocol"], "tcp");
    assert_eq!(tcp["health_check"]["port"], 70);
}

/// The error code and status of an `add_service` that is refused.
async fn service_check(sim: &SimHandle, lb: i64, body: Value) -> (String, StatusCode) {
    let (status, answer) = act(sim, lb, "add_service", body).await;
    let code = answer["error"]["code"]
        .as_str()
        .unwrap_or("none")
        .to_string();
    (code, status)
}

#[tokio::test]
async fn services_are_updated_in_place_and_moved_by_a_delete_and_an_add() {
    let sim = sim().await;
    let lb = load_balancer(&sim, "edge", "lb11").await;
    let tcp = json!({"protocol": "tcp", "listen_port": 70, "destination_port": 70,
                     "proxyprotocol": true});
    let (status, answer) = act(&sim, lb, "add_service", tcp).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let update = json!({"listen_port": 70, "proxyprotocol": false, "destination_port": 7070,
                        "health_check": {"interval": 5}});
    let (status, answer) = act(&sim, lb, "update_service", update).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["action"]["command"], "update_service");
    assert_eq!(answer["action"]["status"], "success");
    let updated = service(&sim, lb, 70).await;
    assert_eq!(updated["proxyprotocol"], false);
    assert_eq!(updated["destination_port"], 7070);
    assert_eq!(updated["health_check"]["interval"], 5);
    assert_eq!(
        updated["health_check"]["port"], 70,
        "the check's port stays"
    );

    // To HTTP: the service gains its options, the check stays TCP until
    // it is changed too.
    let update = json!({"listen_port": 70, "protocol": "http",
                        "http": {"cookie_name": "TESTCOOKIE", "timeout_idle": 90},
                        "health_check": {"protocol": "http", "http": {"path": "/ready"}}});
    let (status, answer) = act(&sim, lb, "update_service", update).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let updated = service(&sim, lb, 70).await;
    assert_eq!(updated["protocol"], "http");
    assert_eq!(updated["http"]["cookie_name"], "TESTCOOKIE");
    assert_eq!(updated["http"]["timeout_idle"], 90);
    assert_eq!(updated["http"]["cookie_lifetime"], 300);
    assert_eq!(updated["health_check"]["http"]["path"], "/ready");

    let missing = json!({"listen_port": 71, "proxyprotocol": true});
    let (status, answer) = act(&sim, lb, "update_service", missing).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let (status, answer) = act(&sim, lb, "update_service", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");

    // A new listen port: the old service goes, the new one comes, with
    // nothing held in between.
    let (status, answer) = act(&sim, lb, "delete_service", json!({"listen_port": 70})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let tcp = json!({"protocol": "tcp", "listen_port": 71, "destination_port": 70});
    let (status, answer) = act(&sim, lb, "add_service", tcp).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let ports: Vec<Value> = services(&sim, lb)
        .await
        .iter()
        .map(|s| s["listen_port"].clone())
        .collect();
    assert_eq!(ports, vec![json!(71)]);
}

#[tokio::test]
async fn the_type_changes_when_its_action_ends_and_only_to_one_with_room() {
    let sim = sim().await;
    let lb = load_balancer(&sim, "grow", "lb11").await;
    let (status, answer) = act(
        &sim,
        lb,
        "change_type",
        json!({"load_balancer_type": "lb21"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["action"]["command"], "change_load_balancer_type");
    let (status, refused) = act(&sim, lb, "add_service", json!({"protocol": "http"})).await;
    assert_eq!(status, StatusCode::LOCKED, "{refused}");
    assert_eq!(finished(&sim, &answer["action"]).await["status"], "success");
    let (_, shown) = call(&sim, Method::GET, &format!("/load_balancers/{lb}"), None).await;
    assert_eq!(shown["load_balancer"]["load_balancer_type"]["name"], "lb21");

    for port in 1..=6 {
        let tcp = json!({"protocol": "tcp", "listen_port": port, "destination_port": port});
        let (status, answer) = act(&sim, lb, "add_service", tcp).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let (status, refused) = act(&sim, lb, "change_type", json!({"load_balancer_type": 1})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_load_balancer_type");
    let (status, refused) = act(
        &sim,
        lb,
        "change_type",
        json!({"load_balancer_type": "lb99"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");

    let (status, answer) = act(
        &sim,
        lb,
        "change_algorithm",
        json!({"type": "least_connections"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["action"]["status"], "success");
    let (_, shown) = call(&sim, Method::GET, &format!("/load_balancers/{lb}"), None).await;
    assert_eq!(
        shown["load_balancer"]["algorithm"]["type"],
        "least_connections"
    );
    let (status, refused) = act(&sim, lb, "change_algorithm", json!({"type": "random"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
}

#[tokio::test]
async fn a_subnet_with_a_load_balancer_or_a_server_in_it_is_kept() {
    let sim = sim().await;
    let subnet = json!({"type": "cloud", "network_zone": "eu-central", "ip_range": "10.0.1.0/24"});
    let (status, network) = call(
        &sim,
        Method::POST,
        "/networks",
        Some(json!({"name": "kept", "ip_range": "10.0.0.0/16", "subnets": [subnet]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{network}");
    let network = network["network"]["id"].as_i64().unwrap();
    let lb = load_balancer(&sim, "inside", "lb11").await;
    let (status, answer) = act(&sim, lb, "attach_to_network", json!({"network": network})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    finished(&sim, &answer["action"]).await;
    let delete = format!("/networks/{network}/actions/delete_subnet");
    let range = json!({"ip_range": "10.0.1.0/24"});
    let (status, refused) = call(&sim, Method::POST, &delete, Some(range.clone())).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "service_error");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("network has attached resources"),
        "{message}"
    );
    let (status, answer) = act(&sim, lb, "detach_from_network", json!({"network": network})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    finished(&sim, &answer["action"]).await;

    let server = json!({"name": "inside", "server_type": "cx23", "image": "debian-12",
                        "location": "nbg1", "networks": [network]});
    let (status, server) = call(&sim, Method::POST, "/servers", Some(server)).await;
    assert_eq!(status, StatusCode::CREATED, "{server}");
    let (status, refused) = call(&sim, Method::POST, &delete, Some(range.clone())).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("servers are attached"), "{message}");
}
