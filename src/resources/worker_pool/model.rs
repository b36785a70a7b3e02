//! `hct_worker_pool`'s configuration: checks without API calls, and its
//! decoding into the pool's group spec; the cluster-wide settings come from
//! the cluster's `worker_join`.

use std::collections::BTreeMap;

use crate::cluster::GroupSpec;
use crate::cluster::budget::Budget;
use crate::cluster::preflight::{self, Paths};
use crate::cluster::settings::{ClusterSettings, Keys, NodeTraits, WorkerJoin};
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::resources::labels::validate_server_labels;
use crate::resources::node_group;
use crate::resources::timeouts;
use crate::resources::values::{string_list, string_map};
use crate::talos::Role;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

pub fn attr(name: &str) -> AttrPath {
    AttrPath::attr(name)
}

/// The attributes a pool's node configs are made from (its hashes are
/// known once these are).
pub const CONFIG_INPUTS: [&str; 6] = [
    "name",
    "server_type",
    "location",
    "node_labels",
    "node_taints",
    "config_patches",
];

/// The cluster's settings carried by `worker_join`.
pub fn settings(value: &Value) -> Result<ClusterSettings, String> {
    value
        .get("worker_join")
        .as_str()
        .ok_or_else(|| "worker_join is not set".to_string())
        .and_then(WorkerJoin::decode)
        .and_then(|j| j.settings())
}

/// Where preflight findings about the pool point (the cluster-wide inputs
/// come in through `worker_join`).
pub fn paths() -> Paths {
    Paths {
        network_id: attr("worker_join"),
        network_plan: attr("worker_join"),
        image_id: attr("worker_join"),
        server_type: attr("server_type"),
        location: attr("location"),
    }
}

/// Checks what can be checked without Hetzner; unknown values pass.
pub fn validate(config: &Value) -> Diagnostics {
    let mut found = Diagnostics::new();
    if let Some(name) = config.get("name").as_str()
        && (name == CONTROL_PLANE_GROUP || !crate::talos::config::is_cluster_name(name))
    {
        found.push(
            Diagnostic::error(
                "Invalid pool name",
                format!(
                    "name = {name:?}: use a key of the plan's worker_pools (lower-case letters, \
                     digits, `-`; not \"cp\")."
                ),
            )
            .at(attr("name")),
        );
    }
    if let Some(text) = config.get("worker_join").as_str()
        && let Err(why) = WorkerJoin::decode(text)
    {
        found.push(Diagnostic::error("Invalid worker_join", why).at(attr("worker_join")));
    }
    if let Some(location) = config.get("location").as_str() {
        found.extend(preflight::location(location, attr("location")).1);
    }
    found.extend(validate_server_labels(
        config.get("server_labels"),
        attr("server_labels"),
    ));
    for (i, taint) in config
        .get("node_taints")
        .as_list()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if let Some(effect) = taint.get("effect").as_str()
            && !TAINT_EFFECTS.contains(&effect)
        {
            found.push(
                Diagnostic::error(
                    "Invalid taint effect",
                    format!("{effect:?}: use one of {}.", TAINT_EFFECTS.join(", ")),
                )
                .at(attr("node_taints").index(i as i64).attr_of("effect")),
            );
        }
    }
    if let Some(text) = max_unavailable(config)
        && let Err(e) = Budget::parse(text)
    {
        found.push(
            Diagnostic::error("Invalid max_unavailable", format!("max_unavailable = {e}."))
                .at(attr("update_strategy").attr_of("max_unavailable")),
        );
    }
    found.extend(timeouts::validate(config));
    found
}

fn max_unavailable(value: &Value) -> Option<&str> {
    value.get("update_strategy").get("max_unavailable").as_str()
}

/// The pool as a group of servers.
pub fn group_spec(value: &Value) -> GroupSpec {
    let node_taints: BTreeMap<String, String> = value
        .get("node_taints")
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            let key = t.get("key").as_str()?.to_string();
            let effect = t.get("effect").as_str()?;
            let talos = match t.get("value").as_str() {
                Some(v) if !v.is_empty() => format!("{v}:{effect}"),
                _ => effect.to_string(),
            };
            Some((key, talos))
        })
        .collect();
    let mut spec = node_group::group_spec(
        value.get("name").as_str().unwrap_or_default(),
        Role::Worker,
        value,
        attr("location"),
        NodeTraits {
            node_labels: string_map(value.get("node_labels")),
            node_taints,
            config_patches: string_list(value.get("config_patches")),
            ..NodeTraits::default()
        },
    );
    // validate refused what does not parse.
    spec.budget = max_unavailable(value)
        .and_then(|text| Budget::parse(text).ok())
        .unwrap_or(Budget::ONE);
    spec
}

/// The error for a pool the cluster's network plan does not have.
pub fn not_in_plan(pool: &str, settings: &ClusterSettings) -> Diagnostic {
    let pools: Vec<&str> = settings
        .plan
        .worker_pools()
        .keys()
        .map(String::as_str)
        .collect();
    Diagnostic::error(
        "Pool not in the network plan",
        format!(
            "The network plan of cluster {} has no worker pool {pool:?} (it has: {}). Add \
             worker_pools.{pool} = {{ cidr = ..., nodes = ... }} to data \"hct_network_plan\", or \
             use one of its pools.",
            settings.cluster_name,
            if pools.is_empty() {
                "none".to_string()
            } else {
                pools.join(", ")
            }
        ),
    )
    .at(attr("name"))
}

/// A warning when the pool's client certificates (in `worker_join`) expire
/// within the renewal window or have: the cluster renews them when it is
/// planned, so this shows only where it is not (`-target`, another
/// workspace).
pub fn access_warning(
    settings: &ClusterSettings,
    now: std::time::SystemTime,
) -> Option<Diagnostic> {
    let Keys::Pool { access, .. } = &settings.keys else {
        return None;
    };
    if !access.due_for_renewal(now) {
        return None;
    }
    let when = access.expires().map_or_else(
        || "an unknown time".to_string(),
        |t| humantime::format_rfc3339_seconds(t).to_string(),
    );
    let state = if access.expires().is_some_and(|t| t <= now) {
        "expired"
    } else {
        "expire"
    };
    Some(
        Diagnostic::warning(
            "The pool's certificates are due",
            format!(
                "The client certificates this pool reaches its nodes and the Kubernetes API with \
                 {state} at {when}; the nodes refuse them after that. hct_cluster_secrets (or \
                 hct_cluster in the serial form) issues new ones in worker_join when it is \
                 planned: apply it (a plan of the whole configuration does), then this pool."
            ),
        )
        .at(attr("worker_join")),
    )
}

#[cfg(test)]
mod access_tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::cluster::settings::{Keys, WorkerJoin};
    use crate::talos::testing::generated_secrets;

    fn pool_settings(issued: SystemTime) -> ClusterSettings {
        WorkerJoin::sample(generated_secrets(), issued)
            .settings()
            .unwrap()
    }

    #[test]
    fn certificates_in_their_last_month_or_past_it_are_said_at_worker_join() {
        let now = SystemTime::now();
        let settings = pool_settings(now);
        let Keys::Pool { access, .. } = &settings.keys else {
            panic!("a pool's settings hold the pool's keys");
        };
        let expires = access.expires().unwrap();
        assert!(access_warning(&settings, now).is_none());
        let day = Duration::from_secs(86400);
        let due = access_warning(&settings, expires - 10 * day).expect("due within the month");
        assert_eq!(due.path, Some(attr("worker_join")));
        assert!(due.detail.contains("expire at"), "{}", due.detail);
        let gone = access_warning(&settings, expires + day).expect("expired");
        assert!(gone.detail.contains("expired at"), "{}", gone.detail);
    }
}
