//! Shared test inputs: a secrets bundle from a fixture (no RSA generation
//! per test), one generated bundle, and the reference network plan.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::network_plan::{self, NetworkPlan, NetworkPlanInput, NodeGroupInput};
use crate::talos::Secrets;

/// A bundle made by `Secrets::generate` for tests only; never use it.
pub(crate) const FIXTURE_SECRETS_YAML: &str = include_str!("testdata/secrets.yaml");

pub(crate) fn fixture_secrets() -> &'static Secrets {
    static SECRETS: OnceLock<Secrets> = OnceLock::new();
    SECRETS.get_or_init(|| Secrets::from_yaml(FIXTURE_SECRETS_YAML).expect("fixture parses"))
}

/// Generated once per test run: RSA-4096 takes about a second.
pub(crate) fn generated_secrets() -> &'static Secrets {
    static SECRETS: OnceLock<Secrets> = OnceLock::new();
    SECRETS.get_or_init(|| Secrets::generate().expect("generates"))
}

/// Network 10.0.0.0/16, nodes in 10.0.128.0/24: control plane
/// 10.0.128.16/28 × 3, pools platform 10.0.128.32/27 × 3 and general
/// 10.0.128.64/27 × 3, services 10.0.192.0/21, pods 10.0.224.0/19 (/24 each).
pub(crate) fn reference_plan() -> NetworkPlan {
    plan_of(&reference_input())
}

/// What [`reference_plan`] is planned from.
pub(crate) fn reference_input() -> NetworkPlanInput {
    let group = |cidr: &str, nodes| NodeGroupInput {
        cidr: Some(cidr.to_owned()),
        nodes: Some(nodes),
    };
    NetworkPlanInput {
        network_cidr: Some("10.0.0.0/16".into()),
        node_subnet: Some("10.0.128.0/24".into()),
        control_plane: Some(group("10.0.128.16/28", 3)),
        worker_pools: Some(BTreeMap::from([
            ("platform".to_owned(), group("10.0.128.32/27", 3)),
            ("general".to_owned(), group("10.0.128.64/27", 3)),
        ])),
        service_cidr: Some("10.0.192.0/21".into()),
        pod_cidr: Some("10.0.224.0/19".into()),
        pod_cidr_mask_size: Some(24),
        native_routing_cidr: Some("10.0.224.0/19".into()),
        multi_datacenter: Some(false),
        api_endpoint: Some("first_control_plane".to_owned()),
        load_balancer_ip: Some(None),
    }
}

/// The plan of `input`, which must have no errors.
pub(crate) fn plan_of(input: &NetworkPlanInput) -> NetworkPlan {
    match network_plan::plan(input) {
        Ok((plan, _)) => plan,
        Err(diagnostics) => panic!("plan of {input:?}: {diagnostics:?}"),
    }
}
