//! `hct_cluster`'s switches for hct's own add-ons (`cluster::addons`):
//! the kubelet-serving CSR approver, the `hcloud` Secret and its token,
//! decoded once.

use super::schema::CCM_TOKEN_WO;
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
}
