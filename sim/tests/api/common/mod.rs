//! What the Talos emulation tests share: a seeded emulator with fast
//! actions, calls to its API, and its Talos snapshot.
#![allow(dead_code)] // each test file uses its own part

use hct_sim::{Id, Sim, SimHandle, SimOptions};
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub async fn sim() -> SimHandle {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Sim::start(SimOptions::seeded_fast()).await.unwrap()
}

pub async fn call(
    sim: &SimHandle,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let base = sim.endpoint();
    let url = match path.strip_prefix("/_sim") {
        Some(rest) => format!("{}/_sim{rest}", base.trim_end_matches("/v1")),
        None => format!("{base}{path}"),
    };
    let mut request = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(sim.token());
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

pub fn talos_image(sim: &SimHandle) -> Id {
    sim.inspect(|w| {
        w.images
            .values()
            .find(|i| {
                i.labels.get("version").map(String::as_str) == Some("v1.12.6")
                    && i.labels.get("arch").map(String::as_str) == Some("amd64")
            })
            .map(|i| i.id)
            .unwrap()
    })
}
