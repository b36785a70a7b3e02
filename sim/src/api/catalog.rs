//! `/server_types` and `/locations`: read-only, from the catalog.

use axum::Router;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use crate::api::query::Query;
use crate::api::{PathId, ok};
use crate::catalog::{LOCATIONS, SERVER_TYPES};
use crate::errors::ApiError;
use crate::pagination::paginate;

pub fn routes() -> Router<crate::app::AppState> {
    Router::new()
        .route("/server_types", get(list_server_types))
        .route("/server_types/{id}", get(get_server_type))
        .route("/locations", get(list_locations))
        .route("/locations/{id}", get(get_location))
}

fn paged(key: &str, items: Vec<Value>, query: &Query) -> Result<Response, ApiError> {
    let (page, pagination) = paginate(items, query.page()?);
    Ok(ok(json!({ key: page, "meta": {"pagination": pagination} })))
}

async fn list_server_types(query: Query) -> Result<Response, ApiError> {
    let name = query.get("name");
    let types = SERVER_TYPES
        .iter()
        .filter(|t| name.is_none_or(|n| t.name == n))
        .map(|t| t.to_api())
        .collect();
    paged("server_types", types, &query)
}

async fn get_server_type(PathId(id): PathId) -> Result<Response, ApiError> {
    let found = SERVER_TYPES
        .iter()
        .find(|t| t.id == id)
        .ok_or_else(|| ApiError::not_found("server_type", id))?;
    Ok(ok(json!({"server_type": found.to_api()})))
}

async fn list_locations(query: Query) -> Result<Response, ApiError> {
    let name = query.get("name");
    let locations = LOCATIONS
        .iter()
        .filter(|l| name.is_none_or(|n| l.name == n))
        .map(|l| l.to_api())
        .collect();
    paged("locations", locations, &query)
}

async fn get_location(PathId(id): PathId) -> Result<Response, ApiError> {
    let found = LOCATIONS
        .iter()
        .find(|l| l.id == id)
        .ok_or_else(|| ApiError::not_found("location", id))?;
    Ok(ok(json!({"location": found.to_api()})))
}
