//! The cluster's network plan: which addresses the nodes get, which ranges
//! pods and services use, and the settings Talos, Cilium and the Hetzner cloud
//! controller manager need to agree on them, for private-only nodes on a
//! Hetzner Cloud network.
//!
//! Where things live:
//! - `input`: the inputs as Terraform gives them, and their attribute paths.
//! - `attributes`: checks of each input on its own.
//! - `layout`: checks of how the ranges sit relative to each other.
//! - `capacity`: checks that the ranges hold the nodes.
//! - `plan`: the resulting [`NetworkPlan`] and its derived values (node CIDRs,
//!   cluster endpoint, etcd subnets, max nodes, placement groups).
//! - `values`: Helm values for Cilium and the Hetzner CCM.
//! - `document`: the plan as a JSON document, and its id.
//! - `hetzner`: Hetzner's rules and limits; the gateway (`hetzner::gateway`).
//! - `names`: the control plane's group name and the Kubernetes API port.
//! - `endpoint`: `api_endpoint` and the load balancer's IP.
//! - `nodes`: which IP each node gets (host `i + 1` of its group's CIDR).
//! - `cidr`: IPv4 range arithmetic.

mod attributes;
mod capacity;
mod cidr;
mod diagram;
mod document;
mod endpoint;
mod hetzner;
mod input;
mod layout;
mod names;
mod nodes;
mod plan;
mod values;

#[cfg(test)]
mod tests;

pub use attributes::etcd_quorum;
pub use endpoint::{ApiEndpoint, FIRST_CONTROL_PLANE, LOAD_BALANCER};
pub use hetzner::{
    HETZNER_METADATA, MAX_SERVERS_PER_NETWORK, MAX_SERVERS_PER_PLACEMENT_GROUP,
    PRIVATE_NETWORK_MTU, placement_groups_for,
};
pub use input::{NetworkPlanInput, NodeGroupInput};
pub use names::{CONTROL_PLANE_GROUP, KUBE_API_PORT, TALOS_API_PORT};
pub use plan::{NetworkPlan, NodeGroup};

use crate::tf::diagnostics::{Diagnostic, Diagnostics};

/// Every check that the known parts of the input allow. Never fails on
/// unknown values; skips the checks that need them.
pub fn validate(input: &NetworkPlanInput) -> Diagnostics {
    check(input).1
}

/// The plan, when every input is known and [`validate`] found no error.
///
/// `Err` carries the diagnostics (errors, plus warnings); `Ok` carries the plan
/// plus the warnings. Unknown inputs are an error here: callers planning with
/// unknown values should call [`validate`] alone and leave the plan unknown
/// (see [`NetworkPlanInput::is_known`]).
pub fn plan(input: &NetworkPlanInput) -> Result<(NetworkPlan, Diagnostics), Diagnostics> {
    let (checked, mut diagnostics) = check(input);
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }
    if let Some(path) = input.first_unknown() {
        diagnostics.push(
            Diagnostic::error(
                "Network plan input not known yet",
                format!(
                    "{path} is not known until another resource is applied; the network plan \
                     can only be computed once every input is known."
                ),
            )
            .at(path),
        );
        return Err(diagnostics);
    }
    match NetworkPlan::from_checked(&checked) {
        Some(plan) => Ok((plan, diagnostics)),
        None => {
            // Validation passed, so every value should fit; a bug if not.
            diagnostics.push(Diagnostic::error(
                "Network plan could not be computed",
                "The inputs passed validation but did not form a plan. This is a bug in the \
                 provider; please report it with your network settings.",
            ));
            Err(diagnostics)
        }
    }
}

/// Each input on its own first, then the checks that combine them.
fn check(input: &NetworkPlanInput) -> (attributes::Checked, Diagnostics) {
    let mut diagnostics = Diagnostics::new();
    let mut checked = attributes::check(input, &mut diagnostics);
    layout::check(&checked, &mut diagnostics);
    capacity::check(&checked, &mut diagnostics);
    let layout = endpoint::Layout {
        network_cidr: checked.network_cidr,
        node_subnet: checked.node_subnet,
        groups: checked
            .groups()
            .filter_map(|(group, g)| Some((group.cidr_path(), g.cidr?)))
            .collect(),
    };
    checked.endpoint = endpoint::resolve(checked.api_endpoint, &layout, &mut diagnostics);
    (checked, diagnostics)
}
