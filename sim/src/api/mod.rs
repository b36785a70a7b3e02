//! The Hetzner Cloud API v1 routes, under `/v1`.

pub mod actions;
pub mod catalog;
pub mod firewalls;
pub mod images;
pub mod input;
pub mod load_balancers;
pub mod networks;
pub mod placement_groups;
pub mod primary_ips;
pub mod query;
pub mod server_media;
pub mod servers;
pub mod ssh_keys;

use axum::Router;
use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::app::AppState;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::gateway;
use crate::ids::{Id, ResourceKind};
use crate::labels::{Labels, Selector};
use crate::pagination::{Sortable, paginate};
use crate::state::World;
use input::Body;
use query::Query;

pub fn router(state: AppState) -> Router<AppState> {
    let routes = Router::new()
        .merge(servers::routes())
        .merge(server_media::routes())
        .merge(networks::routes())
        .merge(images::routes())
        .merge(ssh_keys::routes())
        .merge(placement_groups::routes())
        .merge(firewalls::routes())
        .merge(primary_ips::routes())
        .merge(load_balancers::routes())
        .merge(catalog::routes())
        .merge(actions::routes())
        .merge(actions::resource_routes("/servers", ResourceKind::Server))
        .merge(actions::resource_routes("/networks", ResourceKind::Network))
        .merge(actions::resource_routes("/images", ResourceKind::Image))
        .merge(actions::resource_routes(
            "/firewalls",
            ResourceKind::Firewall,
        ))
        .merge(actions::resource_routes(
            "/load_balancers",
            ResourceKind::LoadBalancer,
        ));
    routes.route_layer(from_fn_with_state(state, gateway::gate))
}

/// A JSON answer; every answer of the API is one.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    let headers = [(header::CONTENT_TYPE, "application/json")];
    (status, headers, body.to_string()).into_response()
}

/// Errors are answered with the API's error envelope.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status(), &self.envelope())
    }
}

pub fn ok(body: Value) -> Response {
    json_response(StatusCode::OK, &body)
}

pub fn created(body: Value) -> Response {
    json_response(StatusCode::CREATED, &body)
}

pub fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// Runs an action request and answers `201 {"action": …}`.
pub fn action_answer(
    sim: &AppState,
    run: impl FnOnce(&mut World, Timestamp) -> Result<Id, ApiError>,
) -> Result<Response, ApiError> {
    let mut world = sim.world();
    let now = world.now;
    let action = run(&mut world, now)?;
    Ok(created(
        json!({"action": world.action(action)?.to_api(now)}),
    ))
}

/// `change_protection` of a resource that has delete protection only
/// (networks, load balancers, Primary IPs): the body's `delete`, or the
/// current setting when it gives none, set by `protect` as an action.
pub fn delete_protection_answer(
    sim: &AppState,
    mut body: Body,
    current: impl FnOnce(&World) -> Result<bool, ApiError>,
    protect: impl FnOnce(&mut World, bool, Timestamp) -> Result<Id, ApiError>,
) -> Result<Response, ApiError> {
    let delete = body.bool("delete");
    body.finish()?;
    action_answer(sim, |w, now| {
        let delete = match delete {
            Some(delete) => delete,
            None => current(w)?,
        };
        protect(w, delete, now)
    })
}

/// The IDs in a request path, in order (`/servers/{id}/actions/{action_id}`).
pub struct PathIds(pub Vec<Id>);

impl<S: Send + Sync> FromRequestParts<S> for PathIds {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::UnknownRoute)?;
        let ids = params
            .iter()
            .map(|(name, value)| {
                value
                    .parse::<Id>()
                    .map_err(|_| ApiError::field(name, format!("'{value}' is not an ID")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self(ids))
    }
}

/// The one ID in a request path.
pub struct PathId(pub Id);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let PathIds(ids) = PathIds::from_request_parts(parts, state).await?;
        ids.first().copied().map(Self).ok_or(ApiError::UnknownRoute)
    }
}

/// A list answer: sorted, paged, rendered, under `key` with `meta.pagination`.
pub fn list<T: Sortable>(
    key: &str,
    mut items: Vec<&T>,
    query: &Query,
    sort_fields: &[&str],
    render: impl Fn(&T) -> Value,
) -> Result<Response, ApiError> {
    let order = query.sort(sort_fields)?;
    let request = query.page()?;
    order.sort(&mut items);
    let (page, pagination) = paginate(items, request);
    let rendered: Vec<Value> = page.into_iter().map(render).collect();
    Ok(ok(
        json!({ key: rendered, "meta": {"pagination": pagination} }),
    ))
}

/// `?name=` and `?label_selector=`, which most lists accept.
pub struct Filter {
    name: Option<String>,
    selector: Option<Selector>,
}

impl Filter {
    pub fn new(query: &Query) -> Result<Self, ApiError> {
        Ok(Self {
            name: query.get("name").map(str::to_string),
            selector: query.selector()?,
        })
    }

    pub fn keeps(&self, name: Option<&str>, labels: &Labels) -> bool {
        self.name
            .as_deref()
            .is_none_or(|wanted| name == Some(wanted))
            && self.selector.as_ref().is_none_or(|s| s.matches(labels))
    }
}
