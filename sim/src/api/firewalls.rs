//! `/firewalls` and the firewall actions.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::api::input::Body;
use crate::api::query::Query;
use crate::api::{Filter, PathId, created, list, no_content, ok};
use crate::app::AppState;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::Id;
use crate::labels::Selector;
use crate::resources::firewalls::{RuleSpec, Target};
use crate::state::World;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/firewalls", get(list_firewalls).post(create_firewall))
        .route(
            "/firewalls/{id}",
            get(get_firewall)
                .put(update_firewall)
                .delete(delete_firewall),
        )
        .route("/firewalls/{id}/actions/set_rules", post(set_rules))
        .route(
            "/firewalls/{id}/actions/apply_to_resources",
            post(apply_to_resources),
        )
        .route(
            "/firewalls/{id}/actions/remove_from_resources",
            post(remove_from_resources),
        )
}

fn rule_specs(body: &mut Body) -> Vec<RuleSpec> {
    let mut specs = Vec::new();
    for mut item in body.nested_list("rules") {
        specs.push(RuleSpec {
            direction: item.required_str("direction"),
            protocol: item.required_str("protocol"),
            port: item.str("port"),
            source_ips: item.strs("source_ips"),
            destination_ips: item.strs("destination_ips"),
            description: item.str("description"),
        });
        body.absorb(item);
    }
    specs
}

/// `apply_to` / `remove_from`: servers and label selectors.
fn targets_of(body: &mut Body, field: &str) -> Vec<Target> {
    let mut targets = Vec::new();
    for mut item in body.nested_list(field) {
        let kind = item.required_str("type");
        let nested = match kind.as_str() {
            "server" | "label_selector" => item.nested(&kind),
            "" => None,
            _ => {
                item.reject("type", "must be one of 'server', 'label_selector'");
                None
            }
        };
        match (kind.as_str(), nested) {
            ("server", Some(mut server)) => {
                targets.push(Target::Server(server.required_id("id")));
                item.absorb(server);
            }
            ("label_selector", Some(mut selector)) => {
                let text = selector.required_str("selector");
                match Selector::parse(&text) {
                    Ok(_) => targets.push(Target::LabelSelector(text)),
                    Err(e) => selector.reject("selector", &e.to_string()),
                }
                item.absorb(selector);
            }
            ("server" | "label_selector", None) => {
                item.reject(&kind, &format!("is required for type '{kind}'"));
            }
            _ => {}
        }
        body.absorb(item);
    }
    targets
}

fn actions_json(world: &World, ids: &[Id], now: Timestamp) -> Result<Vec<Value>, ApiError> {
    ids.iter()
        .map(|id| Ok(world.action(*id)?.to_api(now)))
        .collect()
}

async fn list_firewalls(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let world = sim.world();
    let firewalls = world
        .firewalls
        .values()
        .filter(|f| filter.keeps(Some(&f.name), &f.labels))
        .collect();
    list(
        "firewalls",
        firewalls,
        &query,
        &["id", "name", "created"],
        |f| f.to_api(&world),
    )
}

async fn create_firewall(
    State(sim): State<AppState>,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.required_str("name");
    let labels = body.labels("labels").unwrap_or_default();
    let rules = rule_specs(&mut body);
    let targets = targets_of(&mut body, "apply_to");
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let (id, actions) = world.create_firewall(name, labels, &rules, &targets, now)?;
    Ok(created(json!({
        "firewall": world.firewall(id)?.to_api(&world),
        "actions": actions_json(&world, &actions, now)?,
    })))
}

async fn get_firewall(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let world = sim.world();
    Ok(ok(json!({"firewall": world.firewall(id)?.to_api(&world)})))
}

async fn update_firewall(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.str("name");
    let labels = body.labels("labels");
    body.finish()?;
    let mut world = sim.world();
    world.update_firewall(id, name, labels)?;
    Ok(ok(json!({"firewall": world.firewall(id)?.to_api(&world)})))
}

async fn delete_firewall(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    sim.world().delete_firewall(id)?;
    Ok(no_content())
}

/// Firewall actions answer `201 {"actions": […]}`.
fn actions_answer(world: &World, ids: &[Id], now: Timestamp) -> Result<Response, ApiError> {
    Ok(created(json!({"actions": actions_json(world, ids, now)?})))
}

async fn set_rules(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    if !body.has("rules") {
        body.reject("rules", "is required");
    }
    let rules = rule_specs(&mut body);
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let actions = world.set_firewall_rules(id, &rules, now)?;
    actions_answer(&world, &actions, now)
}

async fn apply_to_resources(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let targets = targets_of(&mut body, "apply_to");
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let actions = world.apply_firewall(id, &targets, now)?;
    actions_answer(&world, &actions, now)
}

async fn remove_from_resources(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let targets = targets_of(&mut body, "remove_from");
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let actions = world.remove_firewall(id, &targets, now)?;
    actions_answer(&world, &actions, now)
}
