//! The emulator's own endpoints under `/_sim` (same bearer token as the API):
//! the whole state, the request log, the Talos call log, fault injection,
//! and the durations in
//! effect (for benchmarks that derive their lower bounds from them).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::api::{no_content, ok};
use crate::app::{AppState, lock};
use crate::errors::ApiError;
use crate::faults::FaultSpec;
use crate::gateway::authorized;

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/state", get(state_json))
        .route("/requests", get(requests).delete(clear_requests))
        .route("/faults", get(faults).post(add_faults).delete(clear_faults))
        .route("/durations", get(durations))
        .route("/talos/calls", get(talos_calls).delete(clear_talos_calls))
        .route_layer(from_fn_with_state(state, admin_auth))
}

async fn admin_auth(State(sim): State<AppState>, request: Request, next: Next) -> Response {
    if !authorized(&sim, request.headers()) {
        return ApiError::Unauthorized.into_response();
    }
    next.run(request).await
}

async fn state_json(State(sim): State<AppState>) -> Response {
    ok(sim.state_json())
}

async fn requests(State(sim): State<AppState>) -> Response {
    ok(lock(&sim.requests).to_json())
}

async fn clear_requests(State(sim): State<AppState>) -> Response {
    lock(&sim.requests).clear();
    no_content()
}

async fn talos_calls(State(sim): State<AppState>) -> Response {
    ok(serde_json::json!({ "calls": sim.world().talos_calls }))
}

async fn clear_talos_calls(State(sim): State<AppState>) -> Response {
    sim.world().talos_calls.clear();
    no_content()
}

async fn durations(State(sim): State<AppState>) -> Response {
    ok(sim.world().config.durations.to_json())
}

async fn faults(State(sim): State<AppState>) -> Response {
    ok(sim.faults_json())
}

/// Accepts one fault or a list of them.
async fn add_faults(State(sim): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let value: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| ApiError::Json(e.to_string()))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        single => vec![single],
    };
    let specs = items
        .into_iter()
        .map(|item| {
            serde_json::from_value::<FaultSpec>(item.clone())
                .map_err(|_| ApiError::InvalidInputMessage(format!("not a fault: {item}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for spec in specs {
        sim.add_fault(spec);
    }
    Ok(ok(sim.faults_json()))
}

async fn clear_faults(State(sim): State<AppState>) -> Response {
    sim.clear_faults();
    no_content()
}
