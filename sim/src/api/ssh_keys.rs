//! `/ssh_keys`.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

use crate::api::input::Body;
use crate::api::query::Query;
use crate::api::{Filter, PathId, created, list, no_content, ok};
use crate::app::AppState;
use crate::errors::ApiError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ssh_keys", get(list_keys).post(create_key))
        .route(
            "/ssh_keys/{id}",
            get(get_key).put(update_key).delete(delete_key),
        )
}

async fn list_keys(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let fingerprint = query.get("fingerprint");
    let world = sim.world();
    let keys = world
        .ssh_keys
        .values()
        .filter(|k| filter.keeps(Some(&k.name), &k.labels))
        .filter(|k| fingerprint.is_none_or(|f| k.fingerprint == f))
        .collect();
    list("ssh_keys", keys, &query, &["id", "name"], |k| k.to_api())
}

async fn create_key(State(sim): State<AppState>, mut body: Body) -> Result<Response, ApiError> {
    let name = body.required_str("name");
    let public_key = body.required_str("public_key");
    let labels = body.labels("labels").unwrap_or_default();
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let id = world.create_ssh_key(name, public_key, labels, now)?;
    Ok(created(json!({"ssh_key": world.ssh_key(id)?.to_api()})))
}

async fn get_key(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    Ok(ok(json!({"ssh_key": sim.world().ssh_key(id)?.to_api()})))
}

async fn update_key(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.str("name");
    let labels = body.labels("labels");
    body.finish()?;
    let mut world = sim.world();
    world.update_ssh_key(id, name, labels)?;
    Ok(ok(json!({"ssh_key": world.ssh_key(id)?.to_api()})))
}

async fn delete_key(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    sim.world().delete_ssh_key(id)?;
    Ok(no_content())
}
