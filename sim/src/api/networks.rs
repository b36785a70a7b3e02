//! `/networks` and the network actions.

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
use crate::resources::networks::{RouteSpec, SubnetSpec};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/networks", get(list_networks).post(create_network))
        .route(
            "/networks/{id}",
            get(get_network).put(update_network).delete(delete_network),
        )
        .route("/networks/{id}/actions/add_subnet", post(add_subnet))
        .route("/networks/{id}/actions/delete_subnet", post(delete_subnet))
        .route("/networks/{id}/actions/add_route", post(add_route))
        .route("/networks/{id}/actions/delete_route", post(delete_route))
        .route(
            "/networks/{id}/actions/change_protection",
            post(change_protection),
        )
}

fn subnet_spec(body: &mut Body) -> SubnetSpec {
    let spec = SubnetSpec {
        kind: body.required_str("type"),
        ip_range: body.str("ip_range"),
        network_zone: body.required_str("network_zone"),
    };
    if body.has("vswitch_id") {
        body.reject("vswitch_id", "vSwitches are not emulated by hct-sim");
    }
    spec
}

fn route_spec(body: &mut Body) -> RouteSpec {
    RouteSpec {
        destination: body.required_str("destination"),
        gateway: body.required_str("gateway"),
    }
}

async fn list_networks(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let world = sim.world();
    let networks = world
        .networks
        .values()
        .filter(|n| filter.keeps(Some(&n.name), &n.labels))
        .collect();
    list(
        "networks",
        networks,
        &query,
        &["id", "name", "created"],
        |n| n.to_api(&world),
    )
}

async fn create_network(State(sim): State<AppState>, mut body: Body) -> Result<Response, ApiError> {
    let name = body.required_str("name");
    let ip_range = body.required_str("ip_range");
    let labels = body.labels("labels").unwrap_or_default();
    let expose = body.bool("expose_routes_to_vswitch").unwrap_or(false);
    let mut subnets = Vec::new();
    for mut item in body.nested_list("subnets") {
        subnets.push(subnet_spec(&mut item));
        body.absorb(item);
    }
    let mut routes = Vec::new();
    for mut item in body.nested_list("routes") {
        routes.push(route_spec(&mut item));
        body.absorb(item);
    }
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let id = world.create_network(name, &ip_range, subnets, routes, labels, expose, now)?;
    Ok(created(
        json!({"network": world.network(id)?.to_api(&world)}),
    ))
}

async fn get_network(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let world = sim.world();
    Ok(ok(json!({"network": world.network(id)?.to_api(&world)})))
}

async fn update_network(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.str("name");
    let labels = body.labels("labels");
    let expose = body.bool("expose_routes_to_vswitch");
    body.finish()?;
    let mut world = sim.world();
    world.update_network(id, name, labels, expose)?;
    Ok(ok(json!({"network": world.network(id)?.to_api(&world)})))
}

async fn delete_network(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    sim.world().delete_network(id)?;
    Ok(no_content())
}

async fn add_subnet(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let spec = subnet_spec(&mut body);
    body.finish()?;
    action_answer(&sim, |w, now| w.add_subnet(id, spec, now))
}

async fn delete_subnet(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let ip_range = body.required_str("ip_range");
    body.finish()?;
    action_answer(&sim, |w, now| w.delete_subnet(id, &ip_range, now))
}

async fn change_protection(
    State(sim): State<AppState>,
    PathId(id): PathId,
    body: Body,
) -> Result<Response, ApiError> {
    delete_protection_answer(
        &sim,
        body,
        |w| Ok(w.network(id)?.delete_protected),
        |w, delete, now| w.protect_network(id, delete, now),
    )
}

async fn add_route(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let spec = route_spec(&mut body);
    body.finish()?;
    action_answer(&sim, |w, now| w.add_route(id, spec, now))
}

async fn delete_route(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let spec = route_spec(&mut body);
    body.finish()?;
    action_answer(&sim, |w, now| w.delete_route(id, spec, now))
}
