//! `hct_kubeconfig`'s configuration: checks without API calls (unknown
//! values pass), and decoding into what minting needs.

use std::time::Duration;

use crate::cluster::settings::{ClusterSettings, Keys, WorkerJoin};
use crate::duration;
use crate::talos::Secrets;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

/// The client certificate's life when `validity` is unset.
pub const DEFAULT_VALIDITY: Duration = Duration::from_secs(3600);
/// Shorter than this would lapse during a slow apply.
pub const MIN_VALIDITY: Duration = Duration::from_secs(5 * 60);
/// Longer is no longer short-lived; `hct_cluster.kubeconfig` lasts a year.
pub const MAX_VALIDITY: Duration = Duration::from_secs(24 * 3600);

/// A decoded configuration.
pub struct KubeconfigInput {
    pub settings: ClusterSettings,
    pub validity: Duration,
}

fn validity(config: &Value) -> Result<Duration, Diagnostic> {
    let Some(text) = config.get("validity").as_str() else {
        return Ok(DEFAULT_VALIDITY);
    };
    let invalid =
        |why: String| Diagnostic::error("Invalid validity", why).at(AttrPath::attr("validity"));
    let parsed = duration::parse(text).map_err(invalid)?;
    if !(MIN_VALIDITY..=MAX_VALIDITY).contains(&parsed) {
        return Err(invalid(format!(
            "validity = {text:?}: write a duration from {} to {}, e.g. \"1h\".",
            duration::format(MIN_VALIDITY),
            duration::format(MAX_VALIDITY)
        )));
    }
    Ok(parsed)
}

fn join(config: &Value) -> Option<Result<WorkerJoin, Diagnostic>> {
    let text = config.get("worker_join").as_str()?;
    Some(WorkerJoin::decode(text).map_err(|why| {
        Diagnostic::error("Invalid worker_join", why).at(AttrPath::attr("worker_join"))
    }))
}

/// The Kubernetes CA's key is in the cluster's secrets, not in the bundle.
fn missing_secrets() -> Diagnostic {
    Diagnostic::error(
        "Missing machine_secrets",
        "The kubeconfig's certificate is signed with the cluster's Kubernetes CA key, which \
         worker_join does not carry: set machine_secrets = hct_cluster.<name>.machine_secrets \
         beside worker_join = hct_cluster.<name>.worker_join.",
    )
    .at(AttrPath::attr("machine_secrets"))
}

/// The cluster's secrets, which must be the bundle's.
fn secrets(config: &Value, join: &WorkerJoin) -> Result<Secrets, Diagnostic> {
    let at = || AttrPath::attr("machine_secrets");
    let text = config
        .get("machine_secrets")
        .as_str()
        .ok_or_else(missing_secrets)?;
    let secrets = Secrets::from_yaml(text)
        .map_err(|e| Diagnostic::error("Invalid machine_secrets", e.to_string()).at(at()))?;
    if !join.keys.is_of(&secrets) {
        return Err(Diagnostic::error(
            "machine_secrets are not worker_join's",
            "Take both from the same cluster: machine_secrets = hct_cluster.<name>.machine_secrets \
             and worker_join = hct_cluster.<name>.worker_join.",
        )
        .at(at()));
    }
    Ok(secrets)
}

/// Checks what is known.
pub fn validate(config: &Value) -> Diagnostics {
    let mut found = Diagnostics::new();
    if let Some(Err(d)) = join(config) {
        found.push(d);
    }
    if config.get("machine_secrets").is_null() {
        found.push(missing_secrets());
    }
    if !config.get("validity").is_unknown()
        && let Err(d) = validity(config)
    {
        found.push(d);
    }
    found
}

/// Decodes a wholly known configuration.
pub fn decode(config: &Value) -> Result<KubeconfigInput, Diagnostic> {
    let join = join(config).unwrap_or_else(|| {
        Err(Diagnostic::error(
            "Missing worker_join",
            "Set worker_join = hct_cluster.<name>.worker_join.",
        )
        .at(AttrPath::attr("worker_join")))
    })?;
    let mut settings = join.settings().map_err(|why| {
        Diagnostic::error(
            "Invalid worker_join",
            format!("{why}; pass hct_cluster.<name>.worker_join unchanged"),
        )
        .at(AttrPath::attr("worker_join"))
    })?;
    settings.keys = Keys::Cluster(secrets(config, &join)?);
    Ok(KubeconfigInput {
        settings,
        validity: validity(config)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(validity: Value) -> Value {
        Value::object([
            ("worker_join", Value::Unknown),
            ("machine_secrets", Value::Unknown),
            ("validity", validity),
        ])
    }

    #[test]
    fn validity_defaults_to_an_hour_and_is_bounded() {
        assert!(validate(&config(Value::Null)).is_empty());
        assert!(validate(&config(Value::Unknown)).is_empty());
        assert!(validate(&config(Value::from("2h30m"))).is_empty());
        assert_eq!(validity(&config(Value::Null)).unwrap(), DEFAULT_VALIDITY);
        for bad in ["1m", "25h", "soon"] {
            let found = validate(&config(Value::from(bad)));
            let d = found.iter().next().expect("refused");
            assert_eq!(d.summary, "Invalid validity");
            assert_eq!(d.path, Some(AttrPath::attr("validity")));
        }
    }

    #[test]
    fn a_worker_join_that_is_not_one_is_refused_without_quoting_it() {
        let config = Value::object([("worker_join", Value::from("secret-ish text"))]);
        let found = validate(&config);
        let d = found.iter().next().expect("refused");
        assert_eq!(d.path, Some(AttrPath::attr("worker_join")));
        assert!(!d.detail.contains("secret-ish"));
        assert!(decode(&config).is_err());
    }
}
