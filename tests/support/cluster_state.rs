//! What a small cluster's state says exists, against what exists on the
//! sim: servers and placement groups, for the "nothing orphaned" checks.

use std::collections::{BTreeMap, BTreeSet};

use hct_sim::SimHandle;

use super::Workspace;

/// The resources of `terraform show -json` that own servers.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Every node any resource in state names: server name → id.
    pub servers: BTreeMap<String, i64>,
    /// Clusters in state (their names).
    pub clusters: BTreeSet<String>,
    /// `placement_group_ids` of the pools in state.
    pub pool_groups: BTreeSet<i64>,
    /// Addresses in state.
    pub addresses: BTreeSet<String>,
}

/// Reads the state through `terraform show -json`.
pub fn recorded(ws: &Workspace) -> Recorded {
    let out = ws
        .terraform(&["show", "-json"])
        .expect_success("show -json");
    let state: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("show -json is not JSON ({e}):\n{out}"));
    let mut recorded = Recorded::default();
    let resources = state["values"]["root_module"]["resources"].as_array();
    for resource in resources.into_iter().flatten() {
        let address = resource["address"].as_str().unwrap_or_default().to_owned();
        let values = &resource["values"];
        let nodes = match resource["type"].as_str() {
            Some("hct_cluster") => {
                if let Some(name) = values["name"].as_str() {
                    recorded.clusters.insert(name.to_owned());
                }
                &values["control_plane_nodes"]
            }
            Some("hct_worker_pool") => {
                let ids = values["placement_group_ids"]
                    .as_array()
                    .into_iter()
                    .flatten();
                recorded
                    .pool_groups
                    .extend(ids.filter_map(|id| id.as_i64()));
                &values["nodes"]
            }
            _ => {
                recorded.addresses.insert(address);
                continue;
            }
        };
        for node in nodes.as_array().into_iter().flatten() {
            if let (Some(name), Some(id)) = (node["name"].as_str(), node["server_id"].as_i64()) {
                recorded.servers.insert(name.to_owned(), id);
            }
        }
        recorded.addresses.insert(address);
    }
    recorded
}

/// The sim's servers but the seed's (its NAT gateway): name → id.
pub fn sim_servers(sim: &SimHandle) -> BTreeMap<String, i64> {
    sim.inspect(|w| {
        w.servers
            .values()
            .filter(|s| !hct_sim::seed::is_seeded(&s.labels))
            .map(|s| (s.name.clone(), s.id))
            .collect()
    })
}

/// The sim's placement groups: name → id.
pub fn sim_placement_groups(sim: &SimHandle) -> BTreeMap<String, i64> {
    sim.inspect(|w| {
        w.placement_groups
            .values()
            .map(|g| (g.name.clone(), g.id))
            .collect()
    })
}

/// Every server on the sim is in state under its name and id (state may
/// name more: a node whose deletion failed half-way is forgotten by the next
/// refresh). Placement groups belong to a resource in state.
pub fn every_server_in_state(sim: &SimHandle, ws: &Workspace) -> Result<(), String> {
    let recorded = recorded(ws);
    let unknown: Vec<String> = sim_servers(sim)
        .into_iter()
        .filter(|(name, id)| recorded.servers.get(name) != Some(id))
        .map(|(name, id)| format!("{name} (#{id})"))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "servers on the sim that state does not name: {unknown:?} (state: {:?})",
            recorded.servers
        ));
    }
    stray_placement_groups(sim, &recorded)
}

/// Sim and state agree exactly: the same servers (names and ids), exactly
/// `expected` of them, and every placement group owned by a resource in
/// state (and every group a pool records exists).
pub fn agree(sim: &SimHandle, ws: &Workspace, expected: &BTreeSet<String>) -> Result<(), String> {
    let recorded = recorded(ws);
    let on_sim = sim_servers(sim);
    if on_sim != recorded.servers {
        return Err(format!(
            "sim's servers {on_sim:?} are not state's {:?}",
            recorded.servers
        ));
    }
    let names: BTreeSet<String> = on_sim.keys().cloned().collect();
    if &names != expected {
        return Err(format!("servers {names:?}, wanted {expected:?}"));
    }
    stray_placement_groups(sim, &recorded)?;
    let groups: BTreeSet<i64> = sim_placement_groups(sim).into_values().collect();
    let missing: Vec<&i64> = recorded.pool_groups.difference(&groups).collect();
    if !missing.is_empty() {
        return Err(format!(
            "state's placement groups {missing:?} are not on the sim"
        ));
    }
    Ok(())
}

/// Groups named for a cluster in state (`<cluster>-<group>-spread-<k>`)
/// are that cluster's; a pool's must also be among its recorded ids.
fn stray_placement_groups(sim: &SimHandle, recorded: &Recorded) -> Result<(), String> {
    let stray: Vec<String> = sim_placement_groups(sim)
        .into_iter()
        .filter(|(name, id)| {
            let owned = recorded.clusters.iter().any(|cluster| {
                name.strip_prefix(&format!("{cluster}-"))
                    .is_some_and(|rest| rest.starts_with("cp-spread-"))
            });
            !owned && !recorded.pool_groups.contains(id)
        })
        .map(|(name, id)| format!("{name} (#{id})"))
        .collect();
    if stray.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "placement groups no resource in state owns: {stray:?}"
        ))
    }
}
