//! The resources the emulated API server knows: a fixed catalog of the
//! built-in kinds that add-on manifests use, plus the kinds of the
//! CustomResourceDefinitions stored in the cluster; and the discovery
//! documents built from them (`/api`, `/api/v1`, `/apis`, `/apis/G/V`), in
//! kube-apiserver's legacy (unaggregated) shape, which kubectl falls back
//! to when the server does not answer in the aggregated one.

use serde_json::{Value, json};

/// One resource of an API group version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// "" for the core group.
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
}

impl Resource {
    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// How kube-apiserver names the resource in messages and Status
    /// details: `secrets`, `daemonsets.apps`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The key objects of this resource are stored under: group and plural
    /// (versions of one resource share their objects).
    pub fn store_key(&self) -> String {
        format!("{}/{}", self.group, self.plural)
    }
}

/// (group, version, plural, kind, namespaced, short names)
type BuiltIn = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
);

const BUILT_IN: &[BuiltIn] = &[
    ("", "v1", "namespaces", "Namespace", false, &["ns"]),
    ("", "v1", "nodes", "Node", false, &["no"]),
    ("", "v1", "pods", "Pod", true, &["po"]),
    ("", "v1", "secrets", "Secret", true, &[]),
    ("", "v1", "configmaps", "ConfigMap", true, &["cm"]),
    ("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"]),
    ("", "v1", "services", "Service", true, &["svc"]),
    ("", "v1", "endpoints", "Endpoints", true, &["ep"]),
    ("", "v1", "events", "Event", true, &["ev"]),
    (
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
    ),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
    ),
    ("", "v1", "limitranges", "LimitRange", true, &["limits"]),
    (
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        true,
        &["quota"],
    ),
    ("apps", "v1", "deployments", "Deployment", true, &["deploy"]),
    ("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"]),
    ("apps", "v1", "statefulsets", "StatefulSet", true, &["sts"]),
    ("apps", "v1", "replicasets", "ReplicaSet", true, &["rs"]),
    (
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        true,
        &[],
    ),
    ("batch", "v1", "jobs", "Job", true, &[]),
    ("batch", "v1", "cronjobs", "CronJob", true, &["cj"]),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
    ),
    (
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
        &["csr"],
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
    ),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
    ),
    (
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        &["sc"],
    ),
    (
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        false,
        &[],
    ),
    (
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        false,
        &[],
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
    ),
    ("coordination.k8s.io", "v1", "leases", "Lease", true, &[]),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
    ),
    (
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        &["netpol"],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
        &["ing"],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
        &[],
    ),
    (
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        true,
        &[],
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        false,
        &[],
    ),
];

/// Every resource the server serves: the built-in ones, then those the
/// stored CRDs define (`crds` are the CRD objects, served versions only).
pub fn catalog<'a>(crds: impl Iterator<Item = &'a Value>) -> Vec<Resource> {
    let mut resources: Vec<Resource> = BUILT_IN
        .iter()
        .map(
            |(group, version, plural, kind, namespaced, short)| Resource {
                group: group.to_string(),
                version: version.to_string(),
                plural: plural.to_string(),
                singular: kind.to_lowercase(),
                kind: kind.to_string(),
                namespaced: *namespaced,
                short_names: short.iter().map(|s| s.to_string()).collect(),
            },
        )
        .collect();
    for crd in crds {
        resources.extend(from_crd(crd));
    }
    resources
}

fn from_crd(crd: &Value) -> Vec<Resource> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let (Some(group), Some(plural), Some(kind)) = (
        spec["group"].as_str(),
        names["plural"].as_str(),
        names["kind"].as_str(),
    ) else {
        return Vec::new();
    };
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    versions
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(true))
        .filter_map(|v| v["name"].as_str())
        .map(|version| Resource {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            singular: names["singular"]
                .as_str()
                .map_or_else(|| kind.to_lowercase(), str::to_string),
            kind: kind.to_string(),
            namespaced: spec["scope"].as_str() != Some("Cluster"),
            short_names: names["shortNames"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// The resource `plural` of `group`/`version`, if served.
pub fn find<'a>(
    resources: &'a [Resource],
    group: &str,
    version: &str,
    plural: &str,
) -> Option<&'a Resource> {
    resources
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The verbs every resource here allows.
const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `GET /api`: the core group's versions.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ]
    })
}

/// `GET /apis`: the named groups and their versions.
pub fn group_list(resources: &[Resource]) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if versions.contains(&r.version) => {}
            Some((_, versions)) => versions.push(r.version.clone()),
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(group, versions)| {
            let entries: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
                .collect();
            json!({
                "name": group,
                "versions": entries,
                "preferredVersion": entries[0].clone(),
            })
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/G` (one group), None when no resource is in it.
pub fn group(resources: &[Resource], name: &str) -> Option<Value> {
    let list = group_list(resources);
    let found = list["groups"]
        .as_array()?
        .iter()
        .find(|g| g["name"] == name)?
        .clone();
    let mut found = found;
    found["kind"] = json!("APIGroup");
    found["apiVersion"] = json!("v1");
    Some(found)
}

/// `GET /api/v1` or `/apis/G/V`: the group version's resources with their
/// subresources; None when nothing is served there.
pub fn resource_list(resources: &[Resource], group: &str, version: &str) -> Option<Value> {
    let mut entries = Vec::new();
    let mut api_version = None;
    for r in resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        api_version = Some(r.api_version());
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": VERBS,
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        entries.push(entry);
        for sub in subresources(r) {
            entries.push(json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": api_version?,
        "resources": entries,
    }))
}

/// The subresources the server answers for a resource.
pub fn subresources(resource: &Resource) -> &'static [&'static str] {
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("certificates.k8s.io", "certificatesigningrequests") => &["approval", "status"],
        ("", "nodes") | ("", "pods") | ("apps", _) | ("batch", _) => &["status"],
        _ => &[],
    }
}
