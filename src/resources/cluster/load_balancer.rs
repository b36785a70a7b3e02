//! `hct_cluster.api_load_balancer_id`: the endpoint's load balancer as state
//! knows it. Planned as state has it when a refresh found it whole, unknown
//! when it did not (or it is yet to be made), so that the plan shows the
//! apply that puts it back; null with `first_control_plane`.

use crate::cluster::endpoint::Seen;
use crate::network_plan::NetworkPlan;
use crate::resources::values::set;
use crate::tf::{Attribute, Type, Value};

pub const ATTRIBUTE: &str = "api_load_balancer_id";

pub fn attribute() -> Attribute {
    Attribute::computed(ATTRIBUTE, Type::Number).description(
        "With the plan's `api_endpoint = \"load_balancer\"`: the id of the private Hetzner Load \
         Balancer behind `endpoint` (`<name>-api`); null with `first_control_plane`. A refresh \
         that finds it deleted or changed outside hct clears it, so the plan shows an update: \
         apply makes it again at the same IP, or completes it (attached to the network, public \
         interface off, the control-plane target and services back). One moved to another IP \
         or network also shows, but apply stops and says what to do.",
    )
}

/// The planned id: kept when the prior state has one in `load_balancer` mode.
pub fn plan(network_plan: &NetworkPlan, prior: &Value, planned: &mut Value) {
    let id = match (network_plan.load_balancer_ip(), prior.get(ATTRIBUTE)) {
        (None, _) => Value::Null,
        (Some(_), id @ Value::Number(_)) => id.clone(),
        (Some(_), _) => Value::Unknown,
    };
    set(planned, ATTRIBUTE, id);
}

/// Records what an apply made whole (`None`: no load balancer, or not a
/// whole one).
pub fn record(state: &mut Value, id: Option<i64>) {
    set(state, ATTRIBUTE, id.map_or(Value::Null, Value::from));
}

/// Records what a refresh saw (`None`: not looked at; state keeps its
/// value). Returns whether the load balancer exists, whole or not.
pub fn refreshed(state: &mut Value, seen: Option<&Seen>) -> bool {
    match seen {
        Some(Seen::Whole(id)) => record(state, Some(*id)),
        Some(Seen::Lacking(_) | Seen::Gone) => record(state, None),
        None => {}
    }
    matches!(seen, Some(Seen::Whole(_) | Seen::Lacking(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talos::testing::{plan_of, reference_input};

    #[test]
    fn planned_as_refresh_found_it_or_unknown_or_null_and_refreshed() {
        let mut input = reference_input();
        let first_control_plane = plan_of(&input);
        input.api_endpoint = Some("load_balancer".into());
        let load_balancer = plan_of(&input);
        let state = |id: Value| Value::object([(ATTRIBUTE, id)]);
        let planned = |plan: &NetworkPlan, prior: &Value| {
            let mut planned = state(Value::Unknown);
            super::plan(plan, prior, &mut planned);
            planned.get(ATTRIBUTE).clone()
        };
        let whole = state(Value::from(41));
        assert_eq!(planned(&load_balancer, &whole), Value::from(41));
        assert!(planned(&load_balancer, &state(Value::Null)).is_unknown());
        assert!(planned(&load_balancer, &Value::Null).is_unknown(), "create");
        assert!(planned(&first_control_plane, &whole).is_null());

        let mut state = whole.clone();
        assert!(refreshed(&mut state, Some(&Seen::Lacking(41))), "exists");
        assert!(state.get(ATTRIBUTE).is_null());
        assert!(!refreshed(&mut state, Some(&Seen::Gone)));
        assert!(state.get(ATTRIBUTE).is_null());
        assert!(refreshed(&mut state, Some(&Seen::Whole(42))));
        assert_eq!(state.get(ATTRIBUTE), &Value::from(42));
        assert!(!refreshed(&mut state, None), "not looked at");
        assert_eq!(state.get(ATTRIBUTE), &Value::from(42), "kept");
    }
}
