//! `/primary_ips` and the Primary IP actions.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::json;

use crate::api::input::Body;
use crate::api::query::Query;
use crate::api::{
    Filter, PathId, action_answer, created, delete_protection_answer, list, no_content, ok,
};
use crate::app::AppState;
use crate::errors::ApiError;
use crate::resources::primary_ips::PrimaryIpSpec;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/primary_ips",
            get(list_primary_ips).post(create_primary_ip),
        )
        .route(
            "/primary_ips/{id}",
            get(get_primary_ip)
                .put(update_primary_ip)
                .delete(delete_primary_ip),
        )
        .route("/primary_ips/{id}/actions/assign", post(assign))
        .route("/primary_ips/{id}/actions/unassign", post(unassign))
        .route(
            "/primary_ips/{id}/actions/change_protection",
            post(change_protection),
        )
}

async fn list_primary_ips(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let ip = query.get("ip").map(str::to_string);
    let world = sim.world();
    let ips = world
        .primary_ips
        .values()
        .filter(|p| filter.keeps(Some(&p.name), &p.labels))
        .filter(|p| ip.as_deref().is_none_or(|wanted| p.has_address(wanted)))
        .collect();
    list("primary_ips", ips, &query, &["id", "created"], |p| {
        p.to_api()
    })
}

async fn create_primary_ip(
    State(sim): State<AppState>,
    mut body: Body,
) -> Result<Response, ApiError> {
    let spec = PrimaryIpSpec {
        name: body.required_str("name"),
        kind: body.required_str("type"),
        assignee_type: body.str("assignee_type"),
        assignee: body.id("assignee_id"),
        location: body.id_or_name("location"),
        datacenter: body.id_or_name("datacenter"),
        auto_delete: body.bool("auto_delete").unwrap_or(false),
        labels: body.labels("labels").unwrap_or_default(),
    };
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let (id, action) = world.create_primary_ip(spec, now)?;
    let action = match action {
        Some(action) => world.action(action)?.to_api(now),
        None => serde_json::Value::Null,
    };
    Ok(created(json!({
        "primary_ip": world.primary_ip(id)?.to_api(),
        "action": action,
    })))
}

async fn get_primary_ip(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let world = sim.world();
    Ok(ok(json!({"primary_ip": world.primary_ip(id)?.to_api()})))
}

async fn update_primary_ip(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.str("name");
    let labels = body.labels("labels");
    let auto_delete = body.bool("auto_delete");
    body.finish()?;
    let mut world = sim.world();
    world.update_primary_ip(id, name, labels, auto_delete)?;
    Ok(ok(json!({"primary_ip": world.primary_ip(id)?.to_api()})))
}

async fn delete_primary_ip(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    sim.world().delete_primary_ip(id)?;
    Ok(no_content())
}

async fn assign(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let server = body.required_id("assignee_id");
    let assignee_type = body.required_str("assignee_type");
    body.finish()?;
    action_answer(&sim, |w, now| {
        w.assign_primary_ip(id, server, &assignee_type, now)
    })
}

async fn unassign(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.unassign_primary_ip(id, now))
}

async fn change_protection(
    State(sim): State<AppState>,
    PathId(id): PathId,
    body: Body,
) -> Result<Response, ApiError> {
    delete_protection_answer(
        &sim,
        body,
        |w| Ok(w.primary_ip(id)?.delete_protected),
        |w, delete, now| w.protect_primary_ip(id, delete, now),
    )
}
