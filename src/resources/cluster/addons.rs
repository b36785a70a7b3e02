//! `hct_cluster`'s switches for hct's own add-ons (`cluster::addons`):
//! the kubelet-serving CSR approver, the `hcloud` Secret and its token,
//! decoded once.

use super::schema::CCM_TOKEN_WO;
use crate::cluster::addons::shadowed_names;
use crate::network_plan::NetworkPlan;
use crate::tf::{AttrPath, Diagnostic, Value};

/// hct's own add-ons, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addons {
    pub csr_approval: bool,
    pub hcloud_secret: bool,
    /// `ccm_token`, or `ccm_token_wo` (in the state an apply works on:
    /// write-only, never in a stored one); None: the provider's token.
    pub ccm_token: Option<String>,
}

/// The add-on switches (unset means on).
pub fn addons(value: &Value) -> Addons {
    let on = |name: &str| value.get(name).as_bool().unwrap_or(true);
    Addons {
        csr_approval: on("kubelet_serving_cert_approval"),
        hcloud_secret: on("hcloud_secret"),
        ccm_token: value
            .get("ccm_token")
            .as_str()
            .or(value.get(CCM_TOKEN_WO).as_str())
            .map(str::to_string),
    }
}

/// One token at most: `ccm_token` or its write-only form.
pub fn validate_token(config: &Value) -> Option<Diagnostic> {
    // Unknown values (variables at validation) pass.
    let set = |name: &str| config.get(name).as_str().is_some();
    (set("ccm_token") && set(CCM_TOKEN_WO)).then(|| {
        Diagnostic::error(
            "Two ccm_tokens",
            "ccm_token and ccm_token_wo are both set: keep one (ccm_token_wo keeps the token \
             out of state; change ccm_token_wo_version with it).",
        )
        .at(AttrPath::attr(CCM_TOKEN_WO))
    })
}

/// With the approver on (in the planned `hct_cluster`): the nodes whose
/// serving certificates it leaves to a person, because another node's
/// name begins theirs.
pub fn approval_warning(planned: &Value, plan: &NetworkPlan) -> Option<Diagnostic> {
    let cluster = planned.get("name").as_str()?;
    if !addons(planned).csr_approval {
        return None;
    }
    let shadowed = shadowed_names(cluster, plan);
    (!shadowed.is_empty()).then(|| {
        Diagnostic::warning(
            "Serving certificates left for a person to approve",
            format!(
                "Another node's name begins the names of {}. hct's CSR approver checks that a \
                 certificate's name starts with the requesting node's name, so it could not tell \
                 their own requests from the shorter-named node's, and approves none for these \
                 names: until a person approves them, `kubectl logs`, `exec` and metrics-server \
                 fail for these nodes. Approve each pending kubelet-serving CSR whose requestor \
                 is system:node:<the name in it> (kubectl get csr; kubectl certificate approve \
                 <csr>), or keep pools under ten nodes and start no pool's name with another \
                 group's (another pool's, or cp) followed by - and a digit \
                 (docs/guides/add-ons.md).",
                shadowed.join(", ")
            ),
        )
        .at(AttrPath::attr("kubelet_serving_cert_approval"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_token_at_most_and_the_write_only_one_counts() {
        let both = Value::object([
            ("ccm_token", Value::from("a")),
            (CCM_TOKEN_WO, Value::from("b")),
        ]);
        let error = validate_token(&both).unwrap();
        assert!(error.is_error() && error.detail.contains("keep one"));
        let write_only = Value::object([(CCM_TOKEN_WO, Value::from("b"))]);
        assert!(validate_token(&write_only).is_none());
        assert_eq!(addons(&write_only).ccm_token.as_deref(), Some("b"));
        assert_eq!(addons(&both).ccm_token.as_deref(), Some("a"));
    }

    #[test]
    fn the_plan_names_the_nodes_left_to_a_person() {
        use crate::network_plan::NodeGroupInput;
        let mut input = crate::talos::testing::reference_input();
        input.worker_pools.as_mut().unwrap().insert(
            "general-2".into(),
            NodeGroupInput {
                cidr: Some("10.0.128.96/28".into()),
                nodes: Some(1),
            },
        );
        let plan = crate::talos::testing::plan_of(&input);
        let on = Value::object([("name", Value::from("x"))]);
        let warning = approval_warning(&on, &plan).unwrap();
        assert!(!warning.is_error());
        assert!(
            warning.detail.contains("names of x-general-2-1."),
            "{}",
            warning.detail
        );
        let off = Value::object([
            ("name", Value::from("x")),
            ("kubelet_serving_cert_approval", Value::from(false)),
        ]);
        assert!(approval_warning(&off, &plan).is_none());
        let reference = crate::talos::testing::reference_plan();
        assert!(approval_warning(&on, &reference).is_none());
    }
}
