//! `hct_cluster`'s switches for hct's own add-ons (`cluster::addons`):
//! the kubelet-serving CSR approver, the `hcloud` Secret and its token,
//! decoded once; and the control planes' inline manifests they add to.

use super::model::{bootstrap_manifests, parse_plan, text};
use crate::cluster::addons;
use crate::tf::Value;

/// hct's own add-ons, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addons {
    pub csr_approval: bool,
    pub hcloud_secret: bool,
    /// None: the provider's token.
    pub ccm_token: Option<String>,
}

/// The add-on switches (unset means on).
pub fn addons(value: &Value) -> Addons {
    let on = |name: &str| value.get(name).as_bool().unwrap_or(true);
    Addons {
        csr_approval: on("kubelet_serving_cert_approval"),
        hcloud_secret: on("hcloud_secret"),
        ccm_token: value.get("ccm_token").as_str().map(str::to_string),
    }
}

/// The approver's manifest (name, contents) for this cluster's plan.
pub fn approver_manifest(value: &Value) -> Option<(String, String)> {
    let plan = parse_plan(text(value, "network_plan")).ok()?;
    Some((
        addons::APPROVER_MANIFEST.to_string(),
        addons::approver_manifest(text(value, "name"), &plan),
    ))
}

/// The control planes' `cluster.inlineManifests`: the bootstrap manifests,
/// then hct's approver when it is on.
pub fn inline_manifests(value: &Value) -> Vec<(String, String)> {
    let mut out = bootstrap_manifests(value);
    if addons(value).csr_approval {
        out.extend(approver_manifest(value));
    }
    out
}

