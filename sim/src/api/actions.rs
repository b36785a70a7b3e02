//! `/actions?id=…` (what clients poll) and the per-resource action lists.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

use crate::actions::{Action, ActionStatus};
use crate::api::query::Query;
use crate::api::{PathIds, list, ok};
use crate::app::AppState;
use crate::errors::ApiError;
use crate::ids::ResourceKind;
use crate::pagination::{SortKey, Sortable};

const SORT_FIELDS: &[&str] = &["id", "command", "status", "started", "finished"];

impl Sortable for Action {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "command" => SortKey::Text(self.command.clone()),
            "status" => SortKey::Text(format!("{:?}", self.status).to_lowercase()),
            "started" => SortKey::Int(self.started.millis() as i64),
            "finished" => self
                .finished
                .map_or(SortKey::Missing, |f| SortKey::Int(f.millis() as i64)),
            _ => SortKey::Int(self.id),
        }
    }
}

fn status_filter(query: &Query) -> Result<Vec<ActionStatus>, ApiError> {
    query
        .all("status")
        .into_iter()
        .map(|s| match s {
            "running" => Ok(ActionStatus::Running),
            "success" => Ok(ActionStatus::Success),
            "error" => Ok(ActionStatus::Error),
            other => Err(ApiError::field(
                "status",
                format!("unknown status '{other}'"),
            )),
        })
        .collect()
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/actions", get(actions_by_id))
        .route("/actions/{id}", get(get_action))
}

/// Listing every action of the project was removed from the API; only
/// actions asked for by ID are returned.
async fn actions_by_id(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let ids = query.ids("id")?;
    if ids.is_empty() {
        return Err(ApiError::field(
            "id",
            "give the IDs of the actions to fetch",
        ));
    }
    let statuses = status_filter(&query)?;
    let world = sim.world();
    let actions = world
        .actions
        .values()
        .filter(|a| ids.contains(&a.id))
        .filter(|a| statuses.is_empty() || statuses.contains(&a.status))
        .collect();
    list("actions", actions, &query, SORT_FIELDS, |a| {
        a.to_api(world.now)
    })
}

async fn get_action(
    State(sim): State<AppState>,
    PathIds(ids): PathIds,
) -> Result<Response, ApiError> {
    let world = sim.world();
    let id = ids.first().copied().unwrap_or_default();
    Ok(ok(json!({"action": world.action(id)?.to_api(world.now)})))
}

/// `GET {base}/actions`, `{base}/actions/{id}`, `{base}/{id}/actions` and
/// `{base}/{id}/actions/{action_id}` for one kind of resource.
pub fn resource_routes(base: &'static str, kind: ResourceKind) -> Router<AppState> {
    let of_kind = move |a: &Action, resource: Option<i64>| {
        a.resources
            .iter()
            .any(|r| r.kind == kind && resource.is_none_or(|id| r.id == id))
    };
    let list_all = move |State(sim): State<AppState>, query: Query| async move {
        list_for(&sim, &query, |a| of_kind(a, None))
    };
    let list_one = move |State(sim): State<AppState>, PathIds(ids): PathIds, query: Query| async move {
        let resource = ids.first().copied();
        list_for(&sim, &query, |a| of_kind(a, resource))
    };
    let get_any = move |State(sim): State<AppState>, PathIds(ids): PathIds| async move {
        let id = ids.first().copied().unwrap_or_default();
        get_for(&sim, id, |a| of_kind(a, None))
    };
    let get_one = move |State(sim): State<AppState>, PathIds(ids): PathIds| async move {
        let (resource, id) = (
            ids.first().copied(),
            ids.get(1).copied().unwrap_or_default(),
        );
        get_for(&sim, id, |a| of_kind(a, resource))
    };
    Router::new()
        .route(&format!("{base}/actions"), get(list_all))
        .route(&format!("{base}/actions/{{id}}"), get(get_any))
        .route(&format!("{base}/{{id}}/actions"), get(list_one))
        .route(
            &format!("{base}/{{id}}/actions/{{action_id}}"),
            get(get_one),
        )
}

fn list_for(
    sim: &AppState,
    query: &Query,
    keep: impl Fn(&Action) -> bool,
) -> Result<Response, ApiError> {
    let statuses = status_filter(query)?;
    let world = sim.world();
    let actions = world
        .actions
        .values()
        .filter(|a| keep(a))
        .filter(|a| statuses.is_empty() || statuses.contains(&a.status))
        .collect();
    list("actions", actions, query, SORT_FIELDS, |a| {
        a.to_api(world.now)
    })
}

fn get_for(sim: &AppState, id: i64, keep: impl Fn(&Action) -> bool) -> Result<Response, ApiError> {
    let world = sim.world();
    let action = world
        .action(id)
        .ok()
        .filter(|a| keep(a))
        .ok_or_else(|| ApiError::not_found("action", id))?;
    Ok(ok(json!({"action": action.to_api(world.now)})))
}
