//! `/load_balancers`, their actions and `/load_balancer_types`.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::json;

use crate::api::input::Body;
use crate::api::query::Query;
use crate::api::{Filter, PathId, action_answer, created, delete_protection_answer, list, ok};
use crate::app::{AppState, lock};
use crate::errors::ApiError;
use crate::load_balancer_types::LOAD_BALANCER_TYPES;
use crate::pagination::paginate;
use crate::resources::load_balancers::{
    HealthCheckHttpSpec, HealthCheckSpec, Listening, LoadBalancerSpec, ServiceHttpSpec,
    ServiceSpec, TargetSpec,
};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/load_balancers",
            get(list_load_balancers).post(create_load_balancer),
        )
        .route(
            "/load_balancers/{id}",
            get(get_load_balancer)
                .put(update_load_balancer)
                .delete(delete_load_balancer),
        )
        .route(
            "/load_balancers/{id}/actions/attach_to_network",
            post(attach_to_network),
        )
        .route(
            "/load_balancers/{id}/actions/detach_from_network",
            post(detach_from_network),
        )
        .route(
            "/load_balancers/{id}/actions/enable_public_interface",
            post(enable_public_interface),
        )
        .route(
            "/load_balancers/{id}/actions/disable_public_interface",
            post(disable_public_interface),
        )
        .route("/load_balancers/{id}/actions/add_target", post(add_target))
        .route(
            "/load_balancers/{id}/actions/remove_target",
            post(remove_target),
        )
        .route(
            "/load_balancers/{id}/actions/add_service",
            post(add_service),
        )
        .route(
            "/load_balancers/{id}/actions/update_service",
            post(update_service),
        )
        .route(
            "/load_balancers/{id}/actions/delete_service",
            post(delete_service),
        )
        .route(
            "/load_balancers/{id}/actions/change_type",
            post(change_type),
        )
        .route(
            "/load_balancers/{id}/actions/change_algorithm",
            post(change_algorithm),
        )
        .route(
            "/load_balancers/{id}/actions/change_protection",
            post(change_protection),
        )
        .route("/load_balancer_types", get(list_types))
        .route("/load_balancer_types/{id}", get(get_type))
}

/// The ports that answer now, read before the world is locked.
fn listening(sim: &AppState) -> Listening {
    lock(&sim.endpoints).keys().copied().collect()
}

/// `certificates`, when given: an array of IDs (`null` counts as absent).
fn optional_ids(body: &mut Body, name: &str) -> Option<Vec<i64>> {
    body.has(name).then(|| body.ids(name))
}

fn optional_strs(body: &mut Body, name: &str) -> Option<Vec<String>> {
    body.has(name).then(|| body.strs(name))
}

fn health_check_spec(body: &mut Body) -> Option<HealthCheckSpec> {
    let mut check = body.nested("health_check")?;
    let http = check.nested("http").map(|mut h| {
        let spec = HealthCheckHttpSpec {
            domain: h.str("domain"),
            path: h.str("path"),
            response: h.str("response"),
            status_codes: optional_strs(&mut h, "status_codes"),
            tls: h.bool("tls"),
        };
        check.absorb(h);
        spec
    });
    let spec = HealthCheckSpec {
        protocol: check.str("protocol"),
        port: check.id("port"),
        interval: check.id("interval"),
        timeout: check.id("timeout"),
        retries: check.id("retries"),
        http,
    };
    body.absorb(check);
    Some(spec)
}

fn service_http_spec(body: &mut Body) -> Option<ServiceHttpSpec> {
    let mut http = body.nested("http")?;
    let spec = ServiceHttpSpec {
        cookie_name: http.str("cookie_name"),
        cookie_lifetime: http.id("cookie_lifetime"),
        certificates: optional_ids(&mut http, "certificates"),
        redirect_http: http.bool("redirect_http"),
        sticky_sessions: http.bool("sticky_sessions"),
        timeout_idle: http.id("timeout_idle"),
    };
    body.absorb(http);
    Some(spec)
}

/// A service in a request: all its fields optional here, the world says
/// which are required where.
fn service_spec(body: &mut Body) -> ServiceSpec {
    ServiceSpec {
        protocol: body.str("protocol"),
        listen_port: body.id("listen_port"),
        destination_port: body.id("destination_port"),
        proxyprotocol: body.bool("proxyprotocol"),
        http: service_http_spec(body),
        health_check: health_check_spec(body),
    }
}

fn target_spec(body: &mut Body) -> TargetSpec {
    let kind = body.required_str("type");
    let server = body.nested("server").map(|mut s| {
        let id = s.required_id("id");
        body.absorb(s);
        id
    });
    let selector = body.nested("label_selector").map(|mut s| {
        let selector = s.required_str("selector");
        body.absorb(s);
        selector
    });
    if body.has("ip") {
        body.reject("ip", "IP targets are not emulated by hct-sim");
    }
    TargetSpec {
        kind,
        server,
        selector,
        use_private_ip: body.bool("use_private_ip").unwrap_or(false),
    }
}

async fn list_load_balancers(
    State(sim): State<AppState>,
    query: Query,
) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let listening = listening(&sim);
    let world = sim.world();
    let found = world
        .load_balancers
        .values()
        .filter(|lb| filter.keeps(Some(&lb.name), &lb.labels))
        .collect();
    list(
        "load_balancers",
        found,
        &query,
        &["id", "name", "created"],
        |lb| lb.to_api(&world, Some(&listening)),
    )
}

async fn create_load_balancer(
    State(sim): State<AppState>,
    mut body: Body,
) -> Result<Response, ApiError> {
    let algorithm = body.nested("algorithm").map(|mut a| {
        let kind = a.required_str("type");
        body.absorb(a);
        kind
    });
    let mut services = Vec::new();
    for mut item in body.nested_list("services") {
        services.push(service_spec(&mut item));
        body.absorb(item);
    }
    let mut targets = Vec::new();
    for mut item in body.nested_list("targets") {
        targets.push(target_spec(&mut item));
        body.absorb(item);
    }
    let spec = LoadBalancerSpec {
        name: body.required_str("name"),
        load_balancer_type: body.required_id_or_name("load_balancer_type"),
        location: body.id_or_name("location"),
        network_zone: body.str("network_zone"),
        algorithm,
        public_interface: body.bool("public_interface"),
        network: body.id("network"),
        labels: body.labels("labels").unwrap_or_default(),
        services,
        targets,
    };
    body.finish()?;
    let listening = listening(&sim);
    let mut world = sim.world();
    let now = world.now;
    let (id, action) = world.create_load_balancer(spec, now)?;
    Ok(created(json!({
        "load_balancer": world.load_balancer(id)?.to_api(&world, Some(&listening)),
        "action": world.action(action)?.to_api(now),
    })))
}

async fn get_load_balancer(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let listening = listening(&sim);
    let world = sim.world();
    let view = world.load_balancer(id)?.to_api(&world, Some(&listening));
    Ok(ok(json!({ "load_balancer": view })))
}

async fn update_load_balancer(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.str("name");
    let labels = body.labels("labels");
    body.finish()?;
    let listening = listening(&sim);
    let mut world = sim.world();
    world.update_load_balancer(id, name, labels)?;
    let view = world.load_balancer(id)?.to_api(&world, Some(&listening));
    Ok(ok(json!({ "load_balancer": view })))
}

async fn delete_load_balancer(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let mut world = sim.world();
    let now = world.now;
    let action = world.delete_load_balancer(id, now)?;
    Ok(ok(json!({"action": world.action(action)?.to_api(now)})))
}

async fn attach_to_network(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let network = body.required_id("network");
    let ip = body.str("ip");
    let ip_range = body.str("ip_range");
    body.finish()?;
    action_answer(&sim, |w, now| {
        w.attach_load_balancer(id, network, ip, ip_range, now)
    })
}

async fn detach_from_network(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let network = body.required_id("network");
    body.finish()?;
    action_answer(&sim, |w, now| w.detach_load_balancer(id, network, now))
}

async fn enable_public_interface(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| {
        w.set_load_balancer_public_interface(id, true, now)
    })
}

async fn disable_public_interface(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| {
        w.set_load_balancer_public_interface(id, false, now)
    })
}

async fn add_target(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let spec = target_spec(&mut body);
    body.finish()?;
    action_answer(&sim, |w, now| w.add_load_balancer_target(id, &spec, now))
}

async fn remove_target(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let spec = target_spec(&mut body);
    body.finish()?;
    action_answer(&sim, |w, now| w.remove_load_balancer_target(id, &spec, now))
}

async fn add_service(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let spec = service_spec(&mut body);
    body.finish()?;
    action_answer(&sim, |w, now| w.add_load_balancer_service(id, &spec, now))
}

async fn update_service(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let port = body.required_id("listen_port");
    let spec = service_spec(&mut body);
    body.finish()?;
    let port = u16::try_from(port)
        .map_err(|_| ApiError::field("listen_port", format!("{port} is not a port")))?;
    action_answer(&sim, |w, now| {
        w.update_load_balancer_service(id, port, &spec, now)
    })
}

async fn change_type(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let wanted = body.required_id_or_name("load_balancer_type");
    body.finish()?;
    action_answer(&sim, |w, now| w.change_load_balancer_type(id, &wanted, now))
}

async fn change_algorithm(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let algorithm = body.required_str("type");
    body.finish()?;
    action_answer(&sim, |w, now| {
        w.change_load_balancer_algorithm(id, &algorithm, now)
    })
}

async fn delete_service(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let port = body.required_id("listen_port");
    body.finish()?;
    let port = u16::try_from(port)
        .map_err(|_| ApiError::field("listen_port", format!("{port} is not a port")))?;
    action_answer(&sim, |w, now| w.delete_load_balancer_service(id, port, now))
}

async fn change_protection(
    State(sim): State<AppState>,
    PathId(id): PathId,
    body: Body,
) -> Result<Response, ApiError> {
    delete_protection_answer(
        &sim,
        body,
        |w| Ok(w.load_balancer(id)?.delete_protected),
        |w, delete, now| w.protect_load_balancer(id, delete, now),
    )
}

async fn list_types(query: Query) -> Result<Response, ApiError> {
    let name = query.get("name");
    let types = LOAD_BALANCER_TYPES
        .iter()
        .filter(|t| name.is_none_or(|n| t.name == n))
        .map(|t| t.to_api())
        .collect();
    let (page, pagination) = paginate(types, query.page()?);
    Ok(ok(
        json!({"load_balancer_types": page, "meta": {"pagination": pagination}}),
    ))
}

async fn get_type(PathId(id): PathId) -> Result<Response, ApiError> {
    let found = LOAD_BALANCER_TYPES
        .iter()
        .find(|t| t.id == id)
        .ok_or_else(|| ApiError::not_found("load_balancer_type", id))?;
    Ok(ok(json!({"load_balancer_type": found.to_api()})))
}
