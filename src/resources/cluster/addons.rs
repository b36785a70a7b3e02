//! `hct_cluster`'s switches for hct's own add-ons (`cluster::addons`):
//! the kubelet-serving CSR approver, the `hcloud` Secret and its token,
//! decoded once.

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
