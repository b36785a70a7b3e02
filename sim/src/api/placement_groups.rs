//! `/placement_groups`.

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
        .route("/placement_groups", get(list_groups).post(create_group))
        .route(
            "/placement_groups/{id}",
            get(get_group).put(update_group).delete(delete_group),
        )
}

async fn list_groups(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let types = query.all("type");
    let world = sim.world();
    let groups = world
        .placement_groups
        .values()
        .filter(|g| filter.keeps(Some(&g.name), &g.labels))
        .filter(|_| types.is_empty() || types.contains(&"spread"))
        .collect();
    list(
        "placement_groups",
        groups,
        &query,
        &["id", "name", "created"],
        |g| g.to_api(&world),
    )
}

async fn create_group(State(sim): State<AppState>, mut body: Body) -> Result<Response, ApiError> {
    let name = body.required_str("name");
    let kind = body.required_str("type");
    let labels = body.labels("labels").unwrap_or_default();
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let id = world.create_placement_group(name, &kind, labels, now)?;
    // Creating a placement group involves no action.
    Ok(created(json!({
        "placement_group": world.placement_group(id)?.to_api(&world),
        "action": null,
    })))
}

async fn get_group(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    let world = sim.world();
    Ok(ok(
        json!({"placement_group": world.placement_group(id)?.to_api(&world)}),
    ))
}

async fn update_group(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.str("name");
    let labels = body.labels("labels");
    body.finish()?;
    let mut world = sim.world();
    world.update_placement_group(id, name, labels)?;
    Ok(ok(
        json!({"placement_group": world.placement_group(id)?.to_api(&world)}),
    ))
}

async fn delete_group(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    sim.world().delete_placement_group(id)?;
    Ok(no_content())
}
