//! The emulator over HTTP: envelopes, headers, locking, rate limits, faults,
//! persistence. Each test starts its own emulator on a free loopback port.

use std::time::Duration;

use hct_sim::{Durations, FaultSpec, Profile, Sim, SimHandle, SimOptions};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// reqwest takes its TLS crypto from the process default; in the workspace
/// build it is compiled without one (hct installs ring), so install ring here.
fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn start(options: SimOptions) -> SimHandle {
    Sim::start(options).await.expect("starting the emulator")
}

fn fast() -> SimOptions {
    SimOptions {
        durations: Durations::new(Profile::Fast),
        ..SimOptions::default()
    }
}

struct Answer {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

async fn call(sim: &SimHandle, method: Method, path: &str, body: Option<Value>) -> Answer {
    call_as(sim, sim.token(), method, path, body).await
}

async fn call_as(
    sim: &SimHandle,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    let base = sim.endpoint();
    let base = if path.starts_with("/_sim") {
        base.trim_end_matches("/v1").to_string()
    } else {
        base
    };
    let mut request = http_client()
        .request(method, format!("{base}{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn private_server(name: &str) -> Value {
    json!({
        "name": name,
        "server_type": "cx23",
        "image": "debian-12",
        "location": "fsn1",
        "start_after_create": false,
        "public_net": {"enable_ipv4": false, "enable_ipv6": false},
    })
}

#[tokio::test]
async fn errors_come_in_the_api_envelope() {
    let sim = start(fast()).await;
    let missing = call(&sim, Method::GET, "/servers/42", None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.body["error"]["code"], "not_found");
    assert!(missing.body["error"]["message"].is_string());
    assert!(missing.body["error"].get("details").is_some());
    assert_eq!(missing.headers["x-correlation-id"].len(), 16);

    let anonymous = call_as(&sim, "wrong", Method::GET, "/servers", None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.body["error"]["code"], "unauthorized");
    assert!(anonymous.headers.contains_key("x-correlation-id"));

    let nowhere = call(&sim, Method::GET, "/volumes", None).await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND);

    let response = http_client()
        .post(format!("{}/servers", sim.endpoint()))
        .bearer_auth(sim.token())
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "json_error");

    let invalid = call(
        &sim,
        Method::POST,
        "/servers",
        Some(json!({"name": 7, "image": "debian-12"})),
    )
    .await;
    assert_eq!(invalid.status, StatusCode::BAD_REQUEST);
    let fields: Vec<&str> = invalid.body["error"]["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert_eq!(fields, vec!["name", "server_type"]);
}

#[tokio::test]
async fn user_data_over_32_kib_names_the_field() {
    let sim = start(fast()).await;
    let mut body = private_server("big");
    body["user_data"] = json!("#".repeat(32 * 1024 + 1));
    let answer = call(&sim, Method::POST, "/servers", Some(body)).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.body["error"]["code"], "invalid_input");
    assert_eq!(
        answer.body["error"]["details"]["fields"][0]["name"],
        "user_data"
    );
    assert!(answer.body["error"]["details"]["fields"][0]["messages"][0].is_string());
}

#[tokio::test]
async fn servers_are_locked_while_their_actions_run() {
    let sim = start(SimOptions {
        durations: Durations::new(Profile::Fast).with("create_server", Duration::from_millis(400)),
        ..SimOptions::default()
    })
    .await;
    let created = call(&sim, Method::POST, "/servers", Some(private_server("cp-1"))).await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert!(created.body["root_password"].is_string());
    assert_eq!(created.body["next_actions"], json!([]));
    assert_eq!(created.body["server"]["locked"], true);
    let id = created.body["server"]["id"].as_i64().unwrap();
    let action = created.body["action"]["id"].as_i64().unwrap();

    let refused = call(
        &sim,
        Method::POST,
        &format!("/servers/{id}/actions/poweron"),
        None,
    )
    .await;
    assert_eq!(refused.status.as_u16(), 423);
    assert_eq!(refused.body["error"]["code"], "locked");

    let running = call(&sim, Method::GET, &format!("/actions?id={action}"), None).await;
    assert_eq!(running.body["actions"][0]["status"], "running");
    assert!(running.body["actions"][0]["progress"].as_u64().unwrap() < 100);
    assert!(running.body["actions"][0]["finished"].is_null());

    tokio::time::sleep(Duration::from_millis(500)).await;
    let done = call(&sim, Method::GET, &format!("/actions/{action}"), None).await;
    assert_eq!(done.body["action"]["status"], "success");
    assert_eq!(done.body["action"]["progress"], 100);
    assert_eq!(
        done.body["action"]["resources"],
        json!([{"id": id, "type": "server"}])
    );
    let started = call(
        &sim,
        Method::POST,
        &format!("/servers/{id}/actions/poweron"),
        None,
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED);
    assert_eq!(started.body["action"]["command"], "start_server");
}

#[tokio::test]
async fn rate_limit_headers_count_down_to_429() {
    let sim = start(SimOptions {
        rate_limit: 3,
        ..fast()
    })
    .await;
    for remaining in ["2", "1", "0"] {
        let answer = call(&sim, Method::GET, "/locations", None).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.headers["ratelimit-limit"], "3");
        assert_eq!(answer.headers["ratelimit-remaining"], remaining);
        let reset: u64 = answer.headers["ratelimit-reset"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(reset > 1_700_000_000);
    }
    let refused = call(&sim, Method::GET, "/locations", None).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(refused.headers["ratelimit-remaining"], "0");
    // The admin API is not rate limited.
    let state = call(&sim, Method::GET, "/_sim/state", None).await;
    assert_eq!(state.status, StatusCode::OK);
}

#[tokio::test]
async fn lists_page_sort_and_select() {
    let sim = start(fast()).await;
    for i in 0..5 {
        let role = if i % 2 == 0 {
            "worker"
        } else {
            "control-plane"
        };
        let answer = call(
            &sim,
            Method::POST,
            "/placement_groups",
            Some(json!({"name": format!("g{i}"), "type": "spread", "labels": {"role": role}})),
        )
        .await;
        assert_eq!(answer.status, StatusCode::CREATED);
        assert!(answer.body["action"].is_null());
    }
    let page = call(
        &sim,
        Method::GET,
        "/placement_groups?per_page=2&page=2&sort=name:desc",
        None,
    )
    .await;
    let names: Vec<&str> = page.body["placement_groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(names, vec!["g2", "g1"]);
    assert_eq!(
        page.body["meta"]["pagination"],
        json!({"page": 2, "per_page": 2, "previous_page": 1, "next_page": 3, "last_page": 3, "total_entries": 5})
    );
    let workers = call(
        &sim,
        Method::GET,
        "/placement_groups?label_selector=role%20in%20(worker)",
        None,
    )
    .await;
    assert_eq!(
        workers.body["placement_groups"].as_array().unwrap().len(),
        3
    );
    let bad = call(
        &sim,
        Method::GET,
        "/placement_groups?label_selector=role%20in",
        None,
    )
    .await;
    assert_eq!(bad.body["error"]["code"], "invalid_input");
}

#[tokio::test]
async fn faults_from_the_admin_api() {
    let sim = start(fast()).await;
    let added = call(
        &sim,
        Method::POST,
        "/_sim/faults",
        Some(
            json!([{"route": "GET /locations", "respond": "unavailable", "count": 2},
                    {"route": "GET /server_types", "latency_ms": 150}]),
        ),
    )
    .await;
    assert_eq!(added.status, StatusCode::OK);
    assert_eq!(added.body["routes"].as_array().unwrap().len(), 2);
    for _ in 0..2 {
        let failed = call(&sim, Method::GET, "/locations", None).await;
        assert_eq!(failed.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(failed.body["error"]["code"], "unavailable");
    }
    assert_eq!(
        call(&sim, Method::GET, "/locations", None).await.status,
        StatusCode::OK
    );
    let started = std::time::Instant::now();
    call(&sim, Method::GET, "/server_types", None).await;
    assert!(started.elapsed() >= Duration::from_millis(150));

    let log = call(&sim, Method::GET, "/_sim/requests", None).await;
    assert_eq!(log.body["counts"]["GET /locations"], 3);
    assert_eq!(log.body["counts"]["GET /server_types"], 1);
    assert_eq!(sim.request_counts().get("GET /locations"), Some(&3));

    sim.add_fault(
        FaultSpec::parse(r#"{"route": "POST /servers", "respond": "locked", "count": 1}"#).unwrap(),
    );
    let locked = call(&sim, Method::POST, "/servers", Some(private_server("x"))).await;
    assert_eq!(locked.body["error"]["code"], "locked");
    let cleared = call(&sim, Method::DELETE, "/_sim/faults", None).await;
    assert_eq!(cleared.status, StatusCode::NO_CONTENT);
    let bad = call(
        &sim,
        Method::POST,
        "/_sim/faults",
        Some(json!({"rout": "x"})),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let anonymous = call_as(&sim, "nope", Method::GET, "/_sim/state", None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn state_shows_user_data_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let options = SimOptions {
        state_file: Some(file.clone()),
        seed: true,
        ..fast()
    };
    let sim = start(options.clone()).await;
    let mut body = private_server("kept");
    body["user_data"] = json!("#cloud-config\n");
    let created = call(&sim, Method::POST, "/servers", Some(body)).await;
    let id = created.body["server"]["id"].as_i64().unwrap();
    let state = call(&sim, Method::GET, "/_sim/state", None).await;
    let server = state.body["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .unwrap();
    assert_eq!(server["user_data"], "#cloud-config\n");
    sim.shutdown().await.unwrap();
    assert!(file.exists());

    let again = start(options).await;
    let server = call(&again, Method::GET, &format!("/servers/{id}"), None).await;
    assert_eq!(server.status, StatusCode::OK);
    assert_eq!(server.body["server"]["name"], "kept");
    // Seeding is for new projects only: still one seed network.
    let networks = call(&again, Method::GET, "/networks", None).await;
    assert_eq!(networks.body["networks"].as_array().unwrap().len(), 1);
    let fresh = call(
        &again,
        Method::POST,
        "/servers",
        Some(private_server("next")),
    )
    .await;
    assert!(
        fresh.body["server"]["id"].as_i64().unwrap() > id,
        "IDs continue after a restart"
    );
}

#[tokio::test]
async fn refuses_non_loopback_addresses() {
    let result = Sim::start(SimOptions {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..SimOptions::default()
    })
    .await;
    assert!(matches!(result, Err(hct_sim::SimError::NotLoopback(_))));
}
