//! `/images`.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

use crate::api::input::Body;
use crate::api::query::Query;
use crate::api::{Filter, PathId, list, no_content, ok};
use crate::app::AppState;
use crate::catalog::Architecture;
use crate::errors::ApiError;

pub fn routes() -> Router<AppState> {
    Router::new().route("/images", get(list_images)).route(
        "/images/{id}",
        get(get_image).put(update_image).delete(delete_image),
    )
}

async fn list_images(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let types = query.all("type");
    let statuses = query.all("status");
    let architecture = query
        .get("architecture")
        .map(|a| {
            Architecture::parse(a)
                .ok_or_else(|| ApiError::field("architecture", "must be x86 or arm"))
        })
        .transpose()?;
    let bound_to = query.ids("bound_to")?;
    let world = sim.world();
    let images = world
        .images
        .values()
        .filter(|i| filter.keeps(i.name.as_deref(), &i.labels))
        .filter(|i| types.is_empty() || types.contains(&i.kind.as_str()))
        .filter(|i| statuses.is_empty() || statuses.contains(&i.status.as_str()))
        .filter(|i| architecture.is_none_or(|a| i.architecture == a))
        // No image is bound to a server: backups are not emulated.
        .filter(|_| bound_to.is_empty())
        .collect();
    list("images", images, &query, &["id", "name", "created"], |i| {
        i.to_api(&world)
    })
}

async fn get_image(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    let world = sim.world();
    Ok(ok(json!({"image": world.image(id)?.to_api(&world)})))
}

async fn update_image(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let description = body.str("description");
    let labels = body.labels("labels");
    let kind = body.str("type");
    body.finish()?;
    let mut world = sim.world();
    world.update_image(id, description, labels, kind.as_deref())?;
    Ok(ok(json!({"image": world.image(id)?.to_api(&world)})))
}

async fn delete_image(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    sim.world().delete_image(id)?;
    Ok(no_content())
}
