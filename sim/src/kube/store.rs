//! The objects of each cluster and what every write does to their
//! metadata: `uid`, `resourceVersion` (one counter per cluster),
//! `creationTimestamp`, `generation` (bumped when anything but metadata
//! and status changes), and the checks kube-apiserver makes before any
//! admission: a name that is a DNS subdomain, an existing namespace for
//! namespaced objects, a matching `apiVersion`/`kind`, no duplicate
//! creates, no stale `resourceVersion` on update.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::kinds::{self, Resource};
use super::{KubeError, timestamp};
use crate::labels::{Labels, Selector};

/// The namespaces every cluster starts with.
pub const INITIAL_NAMESPACES: [&str; 4] =
    ["default", "kube-node-lease", "kube-public", "kube-system"];

/// The stores of all clusters, by `cluster.id`; saved with the world
/// (`--state`), as etcd keeps them across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Stores {
    clusters: BTreeMap<String, ClusterStore>,
}

impl Stores {
    /// The cluster's store, made with its initial namespaces on first use.
    pub fn cluster(&mut self, id: &str, now: u64) -> &mut ClusterStore {
        self.clusters
            .entry(id.to_string())
            .or_insert_with(|| ClusterStore::new(now))
    }

    pub fn get(&self, id: &str) -> Option<&ClusterStore> {
        self.clusters.get(id)
    }

    /// Puts `store` in the cluster's place (a restored etcd's data).
    pub fn insert(&mut self, id: &str, store: ClusterStore) {
        self.clusters.insert(id.to_string(), store);
    }

    /// Forgets a cluster whose etcd is gone.
    pub fn remove(&mut self, id: &str) {
        self.clusters.remove(id);
    }

    pub fn ids(&self) -> Vec<String> {
        self.clusters.keys().cloned().collect()
    }
}

/// Where an object is kept: resource (`group/plural`), namespace ("" for
/// cluster-scoped objects), name.
pub type ObjectKey = (String, String, String);

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClusterStore {
    #[serde(with = "keyed_list")]
    objects: BTreeMap<ObjectKey, Value>,
    revision: u64,
    /// When the store's clock stands (unix seconds): the time of the last
    /// call that wrote.
    pub now: u64,
    /// Talos applied the bootstrap manifests.
    pub bootstrap_manifests_applied: bool,
}

impl ClusterStore {
    pub fn new(now: u64) -> Self {
        let mut store = Self {
            now,
            ..Self::default()
        };
        let resources = store.resources();
        let namespaces = kinds::find(&resources, "", "v1", "namespaces")
            .expect("built in")
            .clone();
        for name in INITIAL_NAMESPACES {
            let object = json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
            store
                .create(&namespaces, "", object, "kube-apiserver")
                .expect("a fresh store takes its namespaces");
        }
        store
    }

    /// The resources served: built in, and those of the stored CRDs.
    pub fn resources(&self) -> Vec<Resource> {
        kinds::catalog(
            self.objects
                .iter()
                .filter(|((resource, _, _), _)| {
                    resource == "apiextensions.k8s.io/customresourcedefinitions"
                })
                .map(|(_, object)| object),
        )
    }

    /// The resource serving `apiVersion` and `kind`, as a RESTMapper maps it.
    pub fn resource_for(&self, api_version: &str, kind: &str) -> Option<Resource> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        self.resources()
            .into_iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
    }

    pub fn get(&self, resource: &Resource, namespace: &str, name: &str) -> Option<&Value> {
        self.objects.get(&key(resource, namespace, name))
    }

    pub fn get_or_404(
        &self,
        resource: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<&Value, KubeError> {
        self.get(resource, namespace, name)
            .ok_or_else(|| KubeError::not_found(resource, name))
    }

    /// The objects of a resource, in one namespace or (None) in all,
    /// matching the label selector and `metadata.name`/`metadata.namespace`
    /// field selectors.
    pub fn list(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
        labels: &Selector,
        fields: &[(String, String)],
    ) -> Vec<&Value> {
        let wanted = resource.store_key();
        self.objects
            .iter()
            .filter(|((r, ns, _), _)| *r == wanted && namespace.is_none_or(|n| n == ns))
            .map(|(_, object)| object)
            .filter(|object| labels.matches(&labels_of(object)))
            .filter(|object| {
                fields.iter().all(|(field, value)| {
                    let actual = match field.as_str() {
                        "metadata.name" => object["metadata"]["name"].as_str(),
                        "metadata.namespace" => object["metadata"]["namespace"].as_str(),
                        _ => None,
                    };
                    actual == Some(value.as_str())
                })
            })
            .collect()
    }

    /// The current resourceVersion of the store, as lists report it.
    pub fn revision(&self) -> String {
        self.revision.to_string()
    }

    /// Checks a body against where it is written: kind and apiVersion (set
    /// when missing), name (from the URL when the body has none), namespace.
    pub fn admit(
        &self,
        resource: &Resource,
        namespace: &str,
        name: Option<&str>,
        mut object: Value,
    ) -> Result<Value, KubeError> {
        if !object.is_object() {
            return Err(KubeError::BadRequest(
                "the object provided is not a JSON object".into(),
            ));
        }
        let api_version = resource.api_version();
        match object["apiVersion"].as_str() {
            None => object["apiVersion"] = json!(api_version),
            Some(given) if given == api_version => {}
            Some(given) => {
                return Err(KubeError::BadRequest(format!(
                    "the API version in the data ({given}) does not match the expected API version ({api_version})"
                )));
            }
        }
        match object["kind"].as_str() {
            None => object["kind"] = json!(resource.kind),
            Some(given) if given == resource.kind => {}
            Some(given) => {
                return Err(KubeError::BadRequest(format!(
                    "the kind in the data ({given}) does not match the expected kind ({})",
                    resource.kind
                )));
            }
        }
        if !object["metadata"].is_object() {
            object["metadata"] = json!({});
        }
        let given = object["metadata"]["name"].as_str().map(str::to_string);
        let name = match (given, name) {
            (Some(given), Some(url)) if given != url => {
                return Err(KubeError::BadRequest(format!(
                    "the name of the object ({given}) does not match the name on the URL ({url})"
                )));
            }
            (Some(given), _) => given,
            (None, Some(url)) => url.to_string(),
            (None, None) => {
                return Err(invalid(
                    resource,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                ));
            }
        };
        let valid = if resource.group == "rbac.authorization.k8s.io" {
            path_segment(&name)
        } else {
            dns_subdomain(&name)
        };
        if let Err(reason) = valid {
            return Err(invalid(
                resource,
                &name,
                "metadata.name",
                &format!("Invalid value: \"{name}\": {reason}"),
            ));
        }
        object["metadata"]["name"] = json!(name);
        if resource.namespaced {
            match object["metadata"]["namespace"].as_str() {
                Some(given) if given != namespace => {
                    return Err(KubeError::BadRequest(
                        "the namespace of the provided object does not match the namespace sent on the request".into(),
                    ));
                }
                _ => object["metadata"]["namespace"] = json!(namespace),
            }
            if !self.has_namespace(namespace) {
                return Err(KubeError::NotFound {
                    resource: "namespaces".into(),
                    group: String::new(),
                    name: namespace.to_string(),
                });
            }
        } else if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("namespace");
        }
        Ok(object)
    }

    fn has_namespace(&self, name: &str) -> bool {
        self.objects
            .contains_key(&("/namespaces".into(), String::new(), name.to_string()))
    }

    /// Creates an admitted object: 409 when one of that name exists.
    pub fn create(
        &mut self,
        resource: &Resource,
        namespace: &str,
        object: Value,
        manager: &str,
    ) -> Result<Value, KubeError> {
        let mut object = self.admit(resource, namespace, None, object)?;
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let key = key(resource, namespace, &name);
        if self.objects.contains_key(&key) {
            return Err(KubeError::AlreadyExists {
                resource: resource.qualified(),
                group: resource.group.clone(),
                name,
            });
        }
        let meta = object["metadata"].as_object_mut().expect("admitted");
        meta.insert("uid".into(), json!(uid()));
        meta.insert("creationTimestamp".into(), json!(timestamp(self.now)));
        meta.remove("resourceVersion");
        if has_spec(resource) {
            meta.insert("generation".into(), json!(1));
        }
        let fields = super::fields::leaves(&object);
        super::fields::record(&mut object, manager, "Update", &fields, self.now);
        Ok(self.put(key, object))
    }

    /// Replaces an object (PUT): its resourceVersion, when given, must be
    /// the current one.
    pub fn update(
        &mut self,
        resource: &Resource,
        namespace: &str,
        name: &str,
        object: Value,
    ) -> Result<Value, KubeError> {
        let object = self.admit(resource, namespace, Some(name), object)?;
        let old = self.get_or_404(resource, namespace, name)?.clone();
        if let Some(given) = object["metadata"]["resourceVersion"].as_str()
            && Some(given) != old["metadata"]["resourceVersion"].as_str()
        {
            return Err(KubeError::Modified {
                resource: resource.qualified(),
                group: resource.group.clone(),
                name: name.to_string(),
            });
        }
        Ok(self.replace(resource, &old, object))
    }

    /// Writes `object` over `old`, keeping what the server owns in the
    /// metadata and bumping the generation when the spec changed.
    pub fn replace(&mut self, resource: &Resource, old: &Value, mut object: Value) -> Value {
        let namespace = old["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = old["metadata"]["name"].as_str().unwrap_or_default();
        for kept in ["uid", "creationTimestamp", "generation"] {
            match old["metadata"].get(kept) {
                Some(value) => object["metadata"][kept] = value.clone(),
                None => {
                    if let Some(meta) = object["metadata"].as_object_mut() {
                        meta.remove(kept);
                    }
                }
            }
        }
        if object["metadata"].get("managedFields").is_none()
            && let Some(fields) = old["metadata"].get("managedFields")
        {
            object["metadata"]["managedFields"] = fields.clone();
        }
        if without_metadata(&object) != without_metadata(old)
            && let Some(generation) = old["metadata"]["generation"].as_u64()
        {
            object["metadata"]["generation"] = json!(generation + 1);
        }
        let key = key(resource, namespace, name);
        if object == *old {
            return object;
        }
        self.put(key, object)
    }

    fn put(&mut self, key: ObjectKey, mut object: Value) -> Value {
        self.revision += 1;
        object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
        self.objects.insert(key, object.clone());
        object
    }

    /// Deletes an object; a namespace takes its objects with it.
    pub fn delete(
        &mut self,
        resource: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Value, KubeError> {
        let object = self
            .objects
            .remove(&key(resource, namespace, name))
            .ok_or_else(|| KubeError::not_found(resource, name))?;
        if resource.store_key() == "/namespaces" {
            self.objects.retain(|(_, ns, _), _| ns != name);
        }
        self.revision += 1;
        Ok(object)
    }

    /// Every stored object, for tests and for the sim's own controllers.
    pub fn objects(&self) -> impl Iterator<Item = (&ObjectKey, &Value)> {
        self.objects.iter()
    }
}

pub fn key(resource: &Resource, namespace: &str, name: &str) -> ObjectKey {
    let namespace = if resource.namespaced { namespace } else { "" };
    (
        resource.store_key(),
        namespace.to_string(),
        name.to_string(),
    )
}

/// The object's labels, for selectors.
pub fn labels_of(object: &Value) -> Labels {
    object["metadata"]["labels"]
        .as_object()
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn without_metadata(object: &Value) -> Map<String, Value> {
    let mut map = object.as_object().cloned().unwrap_or_default();
    map.remove("metadata");
    map.remove("status");
    map
}

/// Whether kube-apiserver keeps a `generation` for the resource's objects.
fn has_spec(resource: &Resource) -> bool {
    !matches!(
        resource.plural.as_str(),
        "secrets" | "configmaps" | "serviceaccounts" | "events" | "endpoints"
    )
}

pub fn invalid(resource: &Resource, name: &str, field: &str, reason: &str) -> KubeError {
    KubeError::Invalid {
        kind: resource.kind.clone(),
        group: resource.group.clone(),
        name: name.to_string(),
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// A lowercase RFC 1123 subdomain, as most object names must be.
fn dns_subdomain(name: &str) -> Result<(), String> {
    const REASON: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
        characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
        'example.com', regex used for validation is \
        '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if name.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    let ok = !name.is_empty()
        && name.split('.').all(|part| {
            part.starts_with(alnum)
                && part.ends_with(alnum)
                && part.chars().all(|c| alnum(c) || c == '-')
        });
    if ok { Ok(()) } else { Err(REASON.into()) }
}

/// RBAC objects' names (`system:coredns`): anything that can be a path
/// segment, as kube-apiserver's RBAC validation allows.
fn path_segment(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("name or generateName is required".into());
    }
    if name == "." || name == ".." {
        return Err(format!("may not be '{name}'"));
    }
    match ["/", "%"].iter().find(|bad| name.contains(*bad)) {
        Some(bad) => Err(format!("may not contain '{bad}'")),
        None => Ok(()),
    }
}

/// A random UUID (version 4), as object uids are.
pub fn uid() -> String {
    let a = fastrand::u64(..);
    let b = fastrand::u64(..);
    let hex = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-4{}-{}{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        ["8", "9", "a", "b"][fastrand::usize(..4)],
        &hex[17..20],
        &hex[20..32]
    )
}

/// The objects as a list of `[key, object]` pairs: JSON has no tuple keys.
mod keyed_list {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    use super::ObjectKey;

    pub fn serialize<S: Serializer>(
        objects: &BTreeMap<ObjectKey, Value>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        objects.iter().collect::<Vec<_>>().serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<ObjectKey, Value>, D::Error> {
        Ok(Vec::<(ObjectKey, Value)>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}
