//! `/servers` and the server actions.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::api::input::Body;
use crate::api::query::Query;
use crate::api::{Filter, PathId, action_answer, created, list, ok};
use crate::app::AppState;
use crate::catalog;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::Id;
use crate::resources::servers::{Attachment, Power, ServerSpec, ServerStatus};
use crate::state::World;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/servers", get(list_servers).post(create_server))
        .route(
            "/servers/{id}",
            get(get_server).put(update_server).delete(delete_server),
        )
        .route("/servers/{id}/actions/poweron", post(power_on))
        .route("/servers/{id}/actions/poweroff", post(power_off))
        .route("/servers/{id}/actions/shutdown", post(shutdown))
        .route("/servers/{id}/actions/reset", post(reset))
        .route("/servers/{id}/actions/reboot", post(reboot))
        .route("/servers/{id}/actions/enable_rescue", post(enable_rescue))
        .route("/servers/{id}/actions/disable_rescue", post(disable_rescue))
        .route("/servers/{id}/actions/create_image", post(create_image))
        .route("/servers/{id}/actions/change_type", post(change_type))
        .route(
            "/servers/{id}/actions/change_protection",
            post(change_protection),
        )
        .route(
            "/servers/{id}/actions/attach_to_network",
            post(attach_to_network),
        )
        .route(
            "/servers/{id}/actions/detach_from_network",
            post(detach_from_network),
        )
        .route(
            "/servers/{id}/actions/change_alias_ips",
            post(change_alias_ips),
        )
        .route(
            "/servers/{id}/actions/add_to_placement_group",
            post(add_to_placement_group),
        )
        .route(
            "/servers/{id}/actions/remove_from_placement_group",
            post(remove_from_placement_group),
        )
}

fn server_json(world: &World, id: Id, now: Timestamp) -> Result<Value, ApiError> {
    Ok(world.server(id)?.to_api(world, now))
}

fn action_json(world: &World, id: Id, now: Timestamp) -> Result<Value, ApiError> {
    Ok(world.action(id)?.to_api(now))
}

async fn list_servers(State(sim): State<AppState>, query: Query) -> Result<Response, ApiError> {
    let filter = Filter::new(&query)?;
    let statuses = query
        .all("status")
        .into_iter()
        .map(|s| {
            ServerStatus::parse(s)
                .ok_or_else(|| ApiError::field("status", format!("unknown status '{s}'")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let world = sim.world();
    let servers = world
        .servers
        .values()
        .filter(|s| filter.keeps(Some(&s.name), &s.labels))
        .filter(|s| statuses.is_empty() || statuses.contains(&s.status))
        .collect();
    list(
        "servers",
        servers,
        &query,
        &["id", "name", "created"],
        |s| s.to_api(&world, world.now),
    )
}

fn server_spec(body: &mut Body) -> ServerSpec {
    let name = body.required_str("name");
    let server_type = body.required_id_or_name("server_type");
    let image = body.required_id_or_name("image");
    let mut spec = ServerSpec::new(&name, &server_type, &image);
    // `datacenter` (deprecated) names a location's data center, e.g. fsn1-dc14;
    // an unknown one is reported as an unknown location.
    spec.location = body.id_or_name("location").or_else(|| {
        body.id_or_name("datacenter")
            .map(|dc| catalog::datacenter(&dc).map_or(dc, |d| d.location.to_string()))
    });
    spec.ssh_keys = body.ids_or_names("ssh_keys");
    spec.networks = body.ids("networks");
    spec.placement_group = body.id("placement_group");
    for mut item in body.nested_list("firewalls") {
        spec.firewalls.push(item.required_id("firewall"));
        body.absorb(item);
    }
    spec.labels = body.labels("labels").unwrap_or_default();
    spec.user_data = body.str("user_data");
    spec.start_after_create = body.bool("start_after_create").unwrap_or(true);
    if let Some(mut public_net) = body.nested("public_net") {
        spec.enable_ipv4 = public_net.bool("enable_ipv4").unwrap_or(true);
        spec.enable_ipv6 = public_net.bool("enable_ipv6").unwrap_or(true);
        spec.primary_ipv4 = public_net.id("ipv4");
        spec.primary_ipv6 = public_net.id("ipv6");
        body.absorb(public_net);
    }
    spec
}

async fn create_server(State(sim): State<AppState>, mut body: Body) -> Result<Response, ApiError> {
    let spec = server_spec(&mut body);
    if !body.ids("volumes").is_empty() {
        return Err(ApiError::field("volumes", "is not emulated by hct-sim"));
    }
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let created_server = world.create_server(spec, now)?;
    let next_actions = created_server
        .next_actions
        .iter()
        .map(|id| action_json(&world, *id, now))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(created(json!({
        "server": server_json(&world, created_server.server, now)?,
        "action": action_json(&world, created_server.action, now)?,
        "next_actions": next_actions,
        "root_password": created_server.root_password,
    })))
}

async fn get_server(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    let world = sim.world();
    Ok(ok(json!({"server": server_json(&world, id, world.now)?})))
}

async fn update_server(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let name = body.str("name");
    let labels = body.labels("labels");
    body.finish()?;
    let mut world = sim.world();
    world.update_server(id, name, labels)?;
    Ok(ok(json!({"server": server_json(&world, id, world.now)?})))
}

async fn delete_server(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let mut world = sim.world();
    let now = world.now;
    let action = world.delete_server(id, now)?;
    Ok(ok(json!({"action": action_json(&world, action, now)?})))
}

async fn change_protection(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let delete = body.bool("delete");
    let rebuild = body.bool("rebuild");
    body.finish()?;
    action_answer(&sim, |w, now| w.protect_server(id, delete, rebuild, now))
}

async fn power_on(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.power(id, Power::On, now))
}

async fn power_off(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.power(id, Power::Off, now))
}

async fn shutdown(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.power(id, Power::Shutdown, now))
}

async fn reset(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.power(id, Power::Reset, now))
}

async fn reboot(State(sim): State<AppState>, PathId(id): PathId) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.power(id, Power::Reboot, now))
}

async fn enable_rescue(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let kind = body.str("type");
    let ssh_keys = body.ids_or_names("ssh_keys");
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let (action, root_password) = world.enable_rescue(id, kind.as_deref(), &ssh_keys, now)?;
    Ok(created(json!({
        "action": action_json(&world, action, now)?,
        "root_password": root_password,
    })))
}

async fn disable_rescue(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.disable_rescue(id, now))
}

async fn create_image(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let kind = body.str("type");
    let description = body.str("description");
    let labels = body.labels("labels").unwrap_or_default();
    body.finish()?;
    let mut world = sim.world();
    let now = world.now;
    let (image, action) = world.create_image(id, kind.as_deref(), description, labels, now)?;
    Ok(created(json!({
        "image": world.image(image)?.to_api(&world),
        "action": action_json(&world, action, now)?,
    })))
}

async fn change_type(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let server_type = body.required_id_or_name("server_type");
    let upgrade_disk = body.bool("upgrade_disk").unwrap_or(false);
    body.finish()?;
    action_answer(&sim, |w, now| {
        w.change_type(id, &server_type, upgrade_disk, now)
    })
}

async fn attach_to_network(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let network = body.required_id("network");
    let attachment = Attachment {
        ip: body.str("ip"),
        alias_ips: body.strs("alias_ips"),
        ip_range: body.str("ip_range"),
    };
    body.finish()?;
    action_answer(&sim, |w, now| {
        w.attach_to_network(id, network, attachment, now)
    })
}

async fn detach_from_network(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let network = body.required_id("network");
    body.finish()?;
    action_answer(&sim, |w, now| w.detach_from_network(id, network, now))
}

async fn change_alias_ips(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let network = body.required_id("network");
    let alias_ips = body.strs("alias_ips");
    body.finish()?;
    action_answer(&sim, |w, now| {
        w.change_alias_ips(id, network, alias_ips, now)
    })
}

async fn add_to_placement_group(
    State(sim): State<AppState>,
    PathId(id): PathId,
    mut body: Body,
) -> Result<Response, ApiError> {
    let group = body.required_id("placement_group");
    body.finish()?;
    action_answer(&sim, |w, now| w.add_to_placement_group(id, group, now))
}

async fn remove_from_placement_group(
    State(sim): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    action_answer(&sim, |w, now| w.remove_from_placement_group(id, now))
}
