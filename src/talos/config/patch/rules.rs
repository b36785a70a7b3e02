//! Where Talos' merge departs from "maps merge, lists append": fields tagged
//! `merge:"replace"` and lists with their own `Merge` that match items by a
//! key (Talos `pkg/machinery/config/types`, v1.11 to v1.14).

/// `v1alpha1` for the legacy document, else the document `kind`.
pub(crate) type Kind<'a> = &'a str;

/// Lists (and one mapping) the patch replaces instead of merging into.
const REPLACED: &[(Kind<'static>, &[&str])] = &[
    ("v1alpha1", &["cluster", "network", "podSubnets"]),
    ("v1alpha1", &["cluster", "network", "serviceSubnets"]),
    ("v1alpha1", &["cluster", "apiServer", "auditPolicy"]),
    ("NetworkRuleConfig", &["ingress"]),
    ("NetworkRuleConfig", &["portSelector", "ports"]),
    ("KubeNetworkConfig", &["podSubnets"]),
    ("KubeNetworkConfig", &["serviceSubnets"]),
    ("KubeAuditPolicyConfig", &["configuration"]),
    ("KubeAuthenticationConfig", &["configuration"]),
    ("KubeCredentialProviderConfig", &["configuration"]),
    ("KubeStaticPodConfig", &["pod"]),
    ("CRIBaseRuntimeSpecConfig", &["overrides"]),
    ("BGPInstanceConfig", &["advertise"]),
    ("BGPInstanceConfig", &["importRoutes"]),
    ("BGPInstanceConfig", &["neighbors"]),
];

/// Lists whose items merge with the item that has the same key field (the
/// first of the fields the patch item sets); `*` is any list item.
const KEYED: &[(Kind<'static>, &[&str], &[&str])] = &[
    (
        "v1alpha1",
        &["machine", "network", "interfaces"],
        &["interface", "deviceSelector"],
    ),
    (
        "v1alpha1",
        &["machine", "network", "interfaces", "*", "vlans"],
        &["vlanId"],
    ),
    (
        "v1alpha1",
        &["cluster", "apiServer", "admissionControl"],
        &["name"],
    ),
    ("ExtensionServiceConfig", &["configFiles"], &["mountPath"]),
];

/// Lists whose items replace the item that has the same key field (v1.13's
/// `ImageVerificationRules.Merge`).
const REPLACED_BY_KEY: &[(Kind<'static>, &[&str], &[&str])] =
    &[("ImageVerificationConfig", &["rules"], &["image"])];

/// How the value at a path merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    Merge,
    Replace,
    KeyedBy(&'static [&'static str]),
    ReplacedByKey(&'static [&'static str]),
}

pub(crate) fn rule_for(kind: Kind<'_>, path: &[String]) -> Rule {
    let matches = |pattern: &[&str]| {
        pattern.len() == path.len()
            && pattern
                .iter()
                .zip(path)
                .all(|(want, step)| *want == step || (*want == "*" && step.starts_with('[')))
    };
    if REPLACED
        .iter()
        .any(|(k, pattern)| *k == kind && matches(pattern))
    {
        return Rule::Replace;
    }
    if let Some((_, _, keys)) = REPLACED_BY_KEY
        .iter()
        .find(|(k, pattern, _)| *k == kind && matches(pattern))
    {
        return Rule::ReplacedByKey(keys);
    }
    KEYED
        .iter()
        .find(|(k, pattern, _)| *k == kind && matches(pattern))
        .map_or(Rule::Merge, |(_, _, keys)| Rule::KeyedBy(keys))
}
