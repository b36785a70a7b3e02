//! Planning the cluster-wide settings, the same way in `hct_cluster`
//! (serial form) and `hct_cluster_secrets`: their defaults and the changes
//! that cannot be made in place; and, for `hct_cluster`'s parallel form,
//! copying them from `worker_join`.

use super::model::{self, attr};
use super::settings_schema::SETTINGS;
use std::time::SystemTime;

use crate::cluster::ClusterSettings;
use crate::cluster::settings::{ConfigDelivery, JoinKeys, WorkerJoin};
use crate::provider::Plan;
use crate::resources::values::set;
use crate::talos::Secrets;
use crate::talos::release::{KubernetesVersion, TalosVersion, UpgradeStep};
use crate::tf::{AttrPath, Diagnostic, Value};

/// Defaults of the optional-computed settings.
pub fn fill_defaults(planned: &mut Value, prior: &Value) {
    let default = |name: &str, value: Option<String>, planned: &mut Value| {
        if planned.get(name).is_null() {
            set(planned, name, value.map_or(Value::Unknown, Value::from));
        }
    };
    let talos = planned.get("talos_version").as_str().map(str::to_string);
    default(
        "kubernetes_version",
        talos.as_deref().and_then(model::default_kubernetes_version),
        planned,
    );
    default("schematic_id", Some(model::default_schematic()), planned);
    default(
        "install_disk",
        Some(crate::talos::config::DEFAULT_INSTALL_DISK.into()),
        planned,
    );
    default(
        "config_delivery",
        Some(ConfigDelivery::DEFAULT.as_str().into()),
        planned,
    );
    default(
        "machine_secrets",
        prior.get("machine_secrets").as_str().map(str::to_string),
        planned,
    );
}

/// Whether every setting is known (so the configs, and `worker_join`, can
/// be made at plan time).
pub fn settings_known(planned: &Value) -> bool {
    SETTINGS
        .iter()
        .all(|name| planned.get(name).is_wholly_known())
}

/// Copies the settings from the planned `worker_join` (the parallel form of
/// `hct_cluster`); all unknown while the bundle is. An invalid bundle is an
/// error at `worker_join` (its text is never quoted: it holds secrets).
///
/// The bundle carries no CA key, so the cluster's secrets come beside it:
/// `machine_secrets` as configured (`hct_cluster_secrets.<name>.machine_secrets`),
/// else the ones in state (a cluster made when the bundle still held them),
/// and must be the bundle's (the same OS and Kubernetes CAs).
pub fn copy_from_join(
    planned: &mut Value,
    config: &Value,
    prior: &Value,
) -> Result<(), Diagnostic> {
    let configured = config.get("machine_secrets").clone();
    let join = match planned.get("worker_join") {
        Value::String(text) => WorkerJoin::decode(text)
            .map_err(|why| Diagnostic::error("Invalid worker_join", why).at(attr("worker_join")))?,
        _ => {
            for name in SETTINGS {
                set(planned, name, Value::Unknown);
            }
            if !configured.is_null() {
                set(planned, "machine_secrets", configured);
            } else if prior.get("machine_secrets").is_null() {
                // Said at plan, before the pools start their servers.
                return Err(missing_secrets());
            }
            return Ok(());
        }
    };
    let machine_secrets = secrets_beside_join(&join.keys, configured, prior)?;
    let plan_text = serde_json::to_string(&join.network_plan).expect("plain JSON");
    let values = [
        ("name", Value::from(join.cluster_name.as_str())),
        ("network_id", Value::from(join.network_id)),
        ("network_plan", Value::from(plan_text)),
        ("talos_version", Value::from(join.talos_version.as_str())),
        (
            "kubernetes_version",
            Value::from(join.kubernetes_version.clone()),
        ),
        ("image_id", Value::from(join.image_id.as_str())),
        ("schematic_id", Value::from(join.schematic_id.as_str())),
        ("install_disk", Value::from(join.install_disk.as_str())),
        (
            "config_delivery",
            Value::from(join.config_delivery.as_str()),
        ),
        (
            "ssh_key_ids",
            if join.ssh_key_ids.is_empty() {
                Value::Null
            } else {
                Value::List(join.ssh_key_ids.iter().copied().map(Value::from).collect())
            },
        ),
        ("machine_secrets", machine_secrets),
    ];
    for (name, value) in values {
        set(planned, name, value);
    }
    Ok(())
}

/// The cluster's secrets in the parallel form (see [`copy_from_join`]).
fn secrets_beside_join(
    keys: &JoinKeys,
    configured: Value,
    prior: &Value,
) -> Result<Value, Diagnostic> {
    let matches = |text: &str| Secrets::from_yaml(text).is_ok_and(|secrets| keys.is_of(&secrets));
    match (&configured, keys) {
        (Value::Unknown, _) => Ok(Value::Unknown),
        (Value::String(text), _) if matches(text) => Ok(configured),
        (Value::String(_), _) => Err(Diagnostic::error(
            "machine_secrets are not worker_join's",
            "machine_secrets and worker_join must come from the same hct_cluster_secrets: set \
             machine_secrets = hct_cluster_secrets.<name>.machine_secrets beside \
             worker_join = hct_cluster_secrets.<name>.worker_join.",
        )
        .at(attr("machine_secrets"))),
        (_, JoinKeys::Legacy { machine_secrets }) => Ok(Value::from(machine_secrets.as_str())),
        (_, JoinKeys::Pool { .. }) => match prior.get("machine_secrets") {
            Value::String(text) if matches(text) => Ok(Value::from(text.as_str())),
            _ => Err(missing_secrets()),
        },
    }
}

fn missing_secrets() -> Diagnostic {
    Diagnostic::error(
        "Missing machine_secrets",
        "The control plane's configs hold the cluster's CA keys, which worker_join does not \
         carry (the pools read it too). Set machine_secrets = \
         hct_cluster_secrets.<name>.machine_secrets beside worker_join.",
    )
    .at(attr("machine_secrets"))
}

/// The pools' bundle for a plan ([`ClusterSettings::worker_join`], with
/// the bundle in state): known, and what the apply makes.
pub fn planned_join(settings: &ClusterSettings, prior_join: &Value) -> Result<Value, Diagnostic> {
    settings
        .worker_join(prior_join.as_str(), SystemTime::now())
        .map(|join| Value::from(join.encode()))
        .map_err(|e| e.to_diagnostic())
}

/// At apply: the planned bundle, or (settings unknown at plan) one made now.
pub fn applied_join(settings: &ClusterSettings, planned: &Value) -> Result<Value, Diagnostic> {
    match planned {
        Value::String(_) => Ok(planned.clone()),
        _ => planned_join(settings, &Value::Null),
    }
}

/// Whether two `secrets.yaml` texts hold the same secrets.
fn same_secrets(a: &str, b: &str) -> bool {
    a == b
        || match (Secrets::from_yaml(a), Secrets::from_yaml(b)) {
            (Ok(a), Ok(b)) => a.to_yaml() == b.to_yaml(),
            _ => false,
        }
}

/// Changes of the settings that cannot be made in place: a new name or
/// network replaces the cluster; an older Talos release and new secrets are
/// refused. `source` is where the planned settings were set (the attribute
/// itself, or `worker_join` in the parallel form).
pub fn settings_changes(
    prior: &Value,
    proposed: &Value,
    source: Option<&AttrPath>,
    plan: &mut Plan,
) {
    let at = |name: &str| source.cloned().unwrap_or_else(|| attr(name));
    let changed = |a: &Value, b: &Value| !b.is_unknown() && a != b;
    for name in ["name", "network_id"] {
        if changed(prior.get(name), proposed.get(name)) {
            plan.requires_replace.push(at(name));
        }
    }
    // A newer talos_version is an upgrade, node by node; an older one is not.
    let releases = (
        prior
            .get("talos_version")
            .as_str()
            .map(str::parse::<TalosVersion>),
        proposed
            .get("talos_version")
            .as_str()
            .map(str::parse::<TalosVersion>),
    );
    if let (Some(Ok(running)), Some(Ok(wanted))) = &releases
        && running > wanted
    {
        plan.diagnostics.push(
            Diagnostic::error(
                "talos_version cannot go back",
                format!(
                    "The nodes run Talos {running}. hct upgrades nodes in place but does not \
                     downgrade them (Talos does not support it for etcd's data). Set talos_version \
                     to {running} or newer, or replace the cluster with `terraform apply -replace`."
                ),
            )
            .at(at("talos_version")),
        );
    }
    // Forward one minor release at a time: hct's rule (Talos' installer
    // takes some longer jumps), so that each config contract step is
    // converged, and checked, before the next.
    if let (Some(Ok(running)), Some(Ok(wanted))) = &releases
        && let ((1, from), (1, to)) = (running.line(), wanted.line())
        && to > from + 1
    {
        plan.diagnostics.push(
            Diagnostic::error(
                "Talos upgrades one minor release at a time",
                format!(
                    "The nodes run Talos {running}; {wanted} is {} minor releases ahead. Set \
                     talos_version to the newest v1.{}.x release and apply, then go on to \
                     {wanted} (each step converges every node before the next).",
                    to - from,
                    from + 1
                ),
            )
            .at(at("talos_version")),
        );
    }
    kubernetes_changes(prior, proposed, source, plan);
    let before = prior.get("machine_secrets");
    let after = proposed.get("machine_secrets");
    if before.is_null() && after.is_null() {
        plan.diagnostics.push(
            Diagnostic::error(
                "machine_secrets needed",
                "This cluster was imported: hct cannot read its secrets from the nodes. Set \
                 machine_secrets to the cluster's talosctl secrets.yaml (e.g. \
                 file(\"secrets.yaml\")).",
            )
            .at(at("machine_secrets")),
        );
    } else if let (Some(before), Some(after)) = (before.as_str(), after.as_str())
        && !same_secrets(before, after)
    {
        plan.diagnostics.push(
            Diagnostic::error(
                "machine_secrets cannot change",
                "The nodes trust the cluster's CAs and tokens; new secrets would lock hct (and \
                 you) out. Remove machine_secrets from the configuration, or set it back (when \
                 moving a cluster to hct_cluster_secrets, set its machine_secrets to the \
                 cluster's secrets.yaml from state: see docs/guides/private-cluster.md).",
            )
            .at(at("machine_secrets")),
        );
    }
}

/// A new `kubernetes_version` is an upgrade the way `talosctl upgrade-k8s`
/// allows one: within the release's minor (patch releases either way), or
/// to the next minor; never an older minor or more than one minor ahead
/// (the control plane moves one minor at a time, and kubelets must not be
/// newer than the API servers); and not together with a new
/// `talos_version` (one upgrade per apply: Talos first when the new
/// Kubernetes needs it). The plan says what moves, in which order.
fn kubernetes_changes(prior: &Value, proposed: &Value, source: Option<&AttrPath>, plan: &mut Plan) {
    let at = || {
        source
            .cloned()
            .unwrap_or_else(|| attr("kubernetes_version"))
    };
    let version = |value: &Value| {
        value
            .get("kubernetes_version")
            .as_str()
            .and_then(|text| KubernetesVersion::parse(text).ok())
    };
    let (Some(running), Some(wanted)) = (version(prior), version(proposed)) else {
        return;
    };
    if running == wanted {
        return;
    }
    let talos = |value: &Value| value.get("talos_version").as_str().map(str::to_string);
    if !proposed.get("talos_version").is_unknown() && talos(prior) != talos(proposed) {
        plan.diagnostics.push(
            Diagnostic::error(
                "Upgrade Talos and Kubernetes in separate applies",
                format!(
                    "This plan changes talos_version from {} to {} and kubernetes_version from \
                     {running} to {wanted}. hct upgrades one at a time: keep kubernetes_version \
                     at {running} and apply the new talos_version first (when {wanted} needs \
                     it), then set kubernetes_version to {wanted} and apply again.",
                    talos(prior).unwrap_or_default(),
                    talos(proposed).unwrap_or_default(),
                ),
            )
            .at(at()),
        );
        return;
    }
    let (major, from) = running.line();
    let refused = match running.upgrade_to(&wanted) {
        UpgradeStep::Allowed => None,
        UpgradeStep::Downgrade => Some(format!(
            "The cluster runs Kubernetes {running}; {wanted} is an older minor release, and \
             Kubernetes does not support downgrading the control plane (etcd's objects may be \
             stored in newer API versions). Set kubernetes_version to v{major}.{from}.x (any \
             patch release of v{major}.{from}) or newer."
        )),
        UpgradeStep::TooFar { minors } => Some(format!(
            "The cluster runs Kubernetes {running}; {wanted} is {} minor releases ahead. The \
             control plane moves one minor release at a time (Kubernetes' version skew policy, \
             and what talosctl upgrade-k8s allows): set kubernetes_version to a v{major}.{} \
             release and apply, then go on to {wanted}.",
            minors,
            from + 1
        )),
    };
    if let Some(detail) = refused {
        plan.diagnostics
            .push(Diagnostic::error("Unsupported Kubernetes upgrade", detail).at(at()));
        return;
    }
    // Once per upgrade: the resource the setting is made in says it.
    if source.is_none() {
        plan.diagnostics.push(
            Diagnostic::warning(
                format!("Kubernetes {running} to {wanted}"),
                format!(
                    "Apply upgrades Kubernetes like talosctl upgrade-k8s: first the control-plane \
                     components (kube-apiserver, kube-controller-manager, kube-scheduler) on one \
                     control plane at a time, each node's static pods running {wanted} before \
                     the next; then the kubelets, one control plane at a time, then each pool's \
                     nodes (its update_strategy at a time), each Node reporting kubelet {wanted} \
                     (and Ready when a CNI runs) before the next. Pools wait until every control \
                     plane runs {wanted}. Then the manifests Talos renders (CoreDNS, kube-proxy \
                     when on) are applied again. An interrupted upgrade goes on at the next \
                     apply."
                ),
            )
            .at(attr("kubernetes_version")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talos::testing::generated_secrets;

    fn bundle(secrets: &Secrets) -> Value {
        let join = WorkerJoin::sample(secrets, std::time::SystemTime::now());
        Value::object([("worker_join", Value::from(join.encode()))])
    }

    fn with_secrets(text: Option<&str>) -> Value {
        Value::object([("machine_secrets", Value::from(text.map(str::to_string)))])
    }

    fn talos(version: &str) -> Value {
        Value::object([("talos_version", Value::from(version.to_string()))])
    }

    fn talos_change(from: &str, to: &str) -> Vec<Diagnostic> {
        let mut plan = Plan {
            planned: Value::Null,
            requires_replace: Vec::new(),
            private: Vec::new(),
            diagnostics: crate::tf::Diagnostics::new(),
        };
        settings_changes(&talos(from), &talos(to), None, &mut plan);
        plan.diagnostics.0
    }

    /// Talos moves forward a minor release per apply: v1.12 to v1.14 is
    /// refused with the way, v1.13 to v1.14 (any patch) is not.
    #[test]
    fn talos_moves_one_minor_release_per_apply() {
        let refused = talos_change("v1.12.6", "v1.14.0");
        let d = refused
            .iter()
            .find(|d| d.summary == "Talos upgrades one minor release at a time")
            .expect("refused");
        assert_eq!(
            d.detail,
            "The nodes run Talos v1.12.6; v1.14.0 is 2 minor releases ahead. Set talos_version \
             to the newest v1.13.x release and apply, then go on to v1.14.0 (each step \
             converges every node before the next)."
        );
        assert_eq!(d.path, Some(attr("talos_version")));
        for (from, to) in [
            ("v1.13.0", "v1.14.0"),
            ("v1.13.9", "v1.14.2"),
            ("v1.14.0", "v1.14.0"),
        ] {
            assert!(
                !talos_change(from, to)
                    .iter()
                    .any(|d| d.summary.contains("minor release")),
                "{from} → {to}"
            );
        }
    }

    #[test]
    fn the_parallel_form_takes_the_secrets_beside_the_bundle_or_from_state() {
        let secrets = generated_secrets();
        let yaml = secrets.to_yaml();
        let copied = |config: &Value, prior: &Value| {
            let mut planned = bundle(secrets);
            copy_from_join(&mut planned, config, prior)
                .map(|()| planned.get("machine_secrets").clone())
        };
        // Configured, and the bundle's.
        let taken = copied(&with_secrets(Some(&yaml)), &Value::Null).unwrap();
        assert_eq!(taken.as_str(), Some(yaml.as_str()));
        // Not configured: a cluster made before keeps the secrets in state.
        let kept = copied(&with_secrets(None), &with_secrets(Some(&yaml))).unwrap();
        assert_eq!(kept.as_str(), Some(yaml.as_str()));
        // Not configured and nothing in state: said where and how.
        let d = copied(&with_secrets(None), &Value::Null).unwrap_err();
        assert_eq!(d.summary, "Missing machine_secrets");
        assert_eq!(d.path, Some(attr("machine_secrets")));
        assert!(
            d.detail
                .contains("hct_cluster_secrets.<name>.machine_secrets")
        );
        // Another cluster's secrets are refused, without quoting them.
        let other = Secrets::for_checking().unwrap().to_yaml();
        let d = copied(&with_secrets(Some(&other)), &Value::Null).unwrap_err();
        assert_eq!(d.summary, "machine_secrets are not worker_join's");
        let token = other
            .lines()
            .find_map(|l| l.trim().strip_prefix("bootstraptoken: "))
            .unwrap();
        assert!(!d.detail.contains(token));
        let d = copied(&with_secrets(None), &with_secrets(Some(&other))).unwrap_err();
        assert_eq!(d.summary, "Missing machine_secrets");
        // Said at plan even while the bundle is unknown (a new cluster).
        let mut planned = Value::object([("worker_join", Value::Unknown)]);
        let d = copy_from_join(&mut planned, &with_secrets(None), &Value::Null).unwrap_err();
        assert_eq!(d.summary, "Missing machine_secrets");
        let mut planned = Value::object([("worker_join", Value::Unknown)]);
        copy_from_join(&mut planned, &with_secrets(Some(&yaml)), &Value::Null).unwrap();
        assert_eq!(planned.get("machine_secrets").as_str(), Some(yaml.as_str()));
    }

    #[test]
    fn the_pools_access_is_kept_while_good_and_made_anew_otherwise() {
        let secrets = generated_secrets();
        let mut planned = bundle(secrets);
        let yaml = secrets.to_yaml();
        copy_from_join(&mut planned, &with_secrets(Some(&yaml)), &Value::Null).unwrap();
        let settings = super::super::model::settings(&planned, secrets.clone()).unwrap();
        let prior = planned.get("worker_join").clone();
        let access = |v: &Value| match WorkerJoin::decode(v.as_str().unwrap()).unwrap().keys {
            JoinKeys::Pool { access, .. } => access,
            JoinKeys::Legacy { .. } => panic!("a new bundle is never legacy"),
        };
        // This cluster's, good for a year: the same certificates.
        let kept = planned_join(&settings, &prior).unwrap();
        assert!(access(&kept) == access(&prior));
        // Another cluster's bundle, or none: made for this period, known at
        // plan and the same at apply.
        let other = Secrets::for_checking().unwrap();
        let mut theirs = bundle(&other);
        copy_from_join(
            &mut theirs,
            &with_secrets(Some(&other.to_yaml())),
            &Value::Null,
        )
        .unwrap();
        let made = planned_join(&settings, theirs.get("worker_join")).unwrap();
        assert!(access(&made) != access(theirs.get("worker_join")));
        assert_eq!(made, planned_join(&settings, &Value::Null).unwrap());
        assert_eq!(made, applied_join(&settings, &Value::Unknown).unwrap());
        assert_eq!(kept, applied_join(&settings, &kept).unwrap());
    }
}
