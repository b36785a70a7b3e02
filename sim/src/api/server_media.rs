//! A server's ISO and backup actions, and the ISOs it can take (`/isos`,
//! read-only from the catalog, by ID).

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::json;

use crate::api::input::Body;
use crate::api::query::Query;
use crate::api::{PathId, action_answer, ok};
use crate::app::AppState;
use crate::catalog::{Architecture, ISOS};
use crate::errors::ApiError;
use crate::pagination::paginate;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/isos", get(list_isos))
        .route("/isos/{id}", get(get_iso))
        .route("/servers/{id}/actions/attach_iso", post(attach_iso))
        .route("/servers/{id}/actions/detach_iso", post(detach_iso))
        .route("/servers/{id}/actions/enable_backup", post(enable_backup))
        .route("/servers/{id}/actions/disable_backup", post(disable_backup))
}

/// `name`, `architecture` (repeatable) and `include_architecture_wildcard`
/// (ISOs for any architecture, left out by an architecture filter unless
/// asked for).
async fn list_isos(query: Query) -> Result<Response, ApiError> {
    let name = query.get("name");
    let mut architectures = Vec::new();
    for text in query.all("architecture") {
        let parsed = Architecture::parse(text).ok_or_else(|| {
            ApiError::field("architecture", format!("unknown architecture '{text}'"))
        })?;
        architectures.push(parsed);
    }
    let wildcard = query.get("include_architecture_wildcard") == Some("true");
    let isos = ISOS
        .iter()
        .filter(|i| name.is_none_or(|n| i.name == n))
        .filter(|i| match i.architecture {
            _ if architectures.is_empty() => true,
            Some(a) => architectures.contains(&a),
            None => wildcard,
        })
        .map(|i| i.to_api())
        .collect();
    let (page, pagination) = paginate(isos, query.page()?);
    Ok(ok(
        json!({"isos": page, "meta": {"pagination": pagination}}),
    ))
}

async fn get_iso(PathId(id): PathId) -> Result<Response, ApiError> {
    let found = ISOS
        .iter()
        .find(|i| i.id == id)
        .ok_or_else(|| ApiError::not_found("iso", id))?;
    Ok(ok(json!({"iso": found.to_api()})))
}

async fn attach_iso(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let iso = body.required_id_or_name("iso");
    body.finish()?;
    action_answer(&sim, |w, now| w.attach_iso(id, &iso, now))
}

async fn detach_iso(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.detach_iso(id, now))
}

/// `backup_window` is deprecated and ignored: Hetzner picks the window.
async fn enable_backup(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let _ = body.str("backup_window");
    body.finish()?;
    action_answer(&sim, |w, now| w.enable_backup(id, now))
}

async fn disable_backup(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.disable_backup(id, now))
}
