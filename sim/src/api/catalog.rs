//! `/server_types`, `/locations` and `/datacenters`: read-only, from the
//! catalog. Lists are by ID; a retired server type is read by ID only.

use axum::Router;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use crate::api::query::Query;
use crate::api::{PathId, ok};
use crate::catalog::{DATACENTERS, LOCATIONS, SERVER_TYPES, listed_server_types};
use crate::errors::ApiError;
use crate::pagination::paginate;

pub fn routes() -> Router<crate::app::AppState> {
    Router::new()
        .route("/server_types", get(list_server_types))
        .route("/server_types/{id}", get(get_server_type))
        .route("/locations", get(list_locations))
        .route("/locations/{id}", get(get_location))
        .route("/datacenters", get(list_datacenters))
        .route("/datacenters/{id}", get(get_datacenter))
}

fn paged(key: &str, items: Vec<Value>, query: &Query) -> Result<Response, ApiError> {
    let (page, pagination) = paginate(items, query.page()?);
    Ok(ok(json!({ key: page, "meta": {"pagination": pagination} })))
}

async fn list_server_types(query: Query) -> Result<Response, ApiError> {
    let name = query.get("name");
    let types = listed_server_types()
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

async fn list_datacenters(query: Query) -> Result<Response, ApiError> {
    let name = query.get("name");
    let datacenters = DATACENTERS
        .iter()
        .filter(|d| name.is_none_or(|n| d.name == n))
        .map(|d| d.to_api())
        .collect();
    let (page, pagination) = paginate(datacenters, query.page()?);
    // `recommendation`: the data center Hetzner suggests for new servers.
    Ok(ok(json!({
        "datacenters": page,
        "recommendation": DATACENTERS[2].id,
        "meta": {"pagination": pagination},
    })))
}

async fn get_datacenter(PathId(id): PathId) -> Result<Response, ApiError> {
    let found = DATACENTERS
        .iter()
        .find(|d| d.id == id)
        .ok_or_else(|| ApiError::not_found("datacenter", id))?;
    Ok(ok(json!({"datacenter": found.to_api()})))
}
