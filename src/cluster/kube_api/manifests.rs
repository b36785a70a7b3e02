//! The objects of bootstrap manifests (multi-document YAML, as Talos'
//! inline manifests take them) and keeping them in the cluster
//! after bootstrap: each object of a new or changed manifest applied with
//! server-side apply (field manager `hct`, `force`, so hct's manifest wins
//! over edits made by hand), and the objects a manifest no longer names, or
//! of a removed manifest, deleted. Which resource serves a kind comes from
//! the API server's discovery, as kubectl's RESTMapper finds it.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::KubeApi;
use crate::cluster::wait::Deadline;

/// The field manager of hct's server-side applies.
pub const FIELD_MANAGER: &str = "hct";
/// The field manager Talos (and `talosctl upgrade-k8s`) applies its own
/// bootstrap manifests with.
pub const TALOS_FIELD_MANAGER: &str = "talos";

/// One object, as state records what a manifest made.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    /// Empty for cluster-scoped objects (and namespaced ones that name
    /// none: the default namespace).
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for ObjectRef {
    /// `apps/v1 DaemonSet kube-system/cilium`, `v1 Namespace /extra`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}/{}",
            self.api_version, self.kind, self.namespace, self.name
        )
    }
}

impl ObjectRef {
    /// Whether both name one object of the cluster: the same API group
    /// (any version: the API server serves an object at each version of
    /// its group), kind and name, and the same namespace, where none means
    /// the default one (cluster-scoped objects have none either way).
    pub fn same_object(&self, other: &ObjectRef) -> bool {
        let group = |v: &str| v.rsplit_once('/').map_or("", |(g, _)| g).to_string();
        let namespace = |n: &str| if n.is_empty() { "default" } else { n }.to_string();
        group(&self.api_version) == group(&other.api_version)
            && self.kind == other.kind
            && self.name == other.name
            && namespace(&self.namespace) == namespace(&other.namespace)
    }

    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split(' ');
        let (api_version, kind, place) = (parts.next()?, parts.next()?, parts.next()?);
        let (namespace, name) = place.split_once('/')?;
        Some(Self {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
        })
    }

    pub(super) fn of(object: &Value) -> Option<Self> {
        Some(Self {
            api_version: object["apiVersion"].as_str()?.to_string(),
            kind: object["kind"].as_str()?.to_string(),
            namespace: object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name: object["metadata"]["name"].as_str()?.to_string(),
        })
    }
}

/// The objects of a manifest; Err says which document is wrong.
pub fn objects(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let documents = crate::talos::yaml::parse_documents(text).map_err(|e| e.to_string())?;
    for (n, value) in documents.into_iter().enumerate() {
        match value {
            Value::Null => {}
            Value::Object(_) if ObjectRef::of(&value).is_some() => out.push(value),
            _ => {
                return Err(format!(
                    "document {} is no Kubernetes object (apiVersion, kind, metadata.name)",
                    n + 1
                ));
            }
        }
    }
    Ok(out)
}

/// The objects a manifest makes, in its order.
pub fn refs(text: &str) -> Result<Vec<ObjectRef>, String> {
    Ok(objects(text)?.iter().filter_map(ObjectRef::of).collect())
}

/// Where a kind is served: plural resource name and scope.
struct Served {
    plural: String,
    namespaced: bool,
}

/// Discovery, one group version at a time, cached for one sync.
#[derive(Default)]
pub(super) struct Mapper {
    versions: BTreeMap<String, Vec<(String, Served)>>,
}

impl Mapper {
    async fn find(
        &mut self,
        api: &KubeApi<'_>,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<&Served>, String> {
        if !self.versions.contains_key(api_version) {
            let path = if api_version.contains('/') {
                format!("/apis/{api_version}")
            } else {
                format!("/api/{api_version}")
            };
            let answer = api.call("GET", &path, None, b"").await?;
            if answer.status == 404 {
                // Not served (e.g. its CRD is gone): no kinds in it.
                self.versions.insert(api_version.to_string(), Vec::new());
            } else if answer.status != 200 {
                return Err(format!(
                    "the API server serves no {api_version} (HTTP {}: {})",
                    answer.status,
                    answer.message()
                ));
            } else {
                let list: Value = serde_json::from_str(&answer.body)
                    .map_err(|e| format!("discovery of {api_version}: {e}"))?;
                let served = list["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| r["name"].as_str().is_some_and(|n| !n.contains('/')))
                    .filter_map(|r| {
                        Some((
                            r["kind"].as_str()?.to_string(),
                            Served {
                                plural: r["name"].as_str()?.to_string(),
                                namespaced: r["namespaced"].as_bool().unwrap_or(false),
                            },
                        ))
                    })
                    .collect();
                self.versions.insert(api_version.to_string(), served);
            }
        }
        Ok(self.versions[api_version]
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, served)| served))
    }

    /// The object's path; None when the API server does not serve its kind
    /// (Err: discovery failed).
    pub(super) async fn path(
        &mut self,
        api: &KubeApi<'_>,
        object: &ObjectRef,
    ) -> Result<Option<String>, String> {
        let Some(served) = self.find(api, &object.api_version, &object.kind).await? else {
            return Ok(None);
        };
        let base = if object.api_version.contains('/') {
            format!("/apis/{}", object.api_version)
        } else {
            format!("/api/{}", object.api_version)
        };
        let namespace = match (served.namespaced, object.namespace.as_str()) {
            (false, _) => String::new(),
            (true, "") => "/namespaces/default".into(),
            (true, ns) => format!("/namespaces/{ns}"),
        };
        Ok(Some(format!(
            "{base}{namespace}/{}/{}",
            served.plural, object.name
        )))
    }
}

/// How long to wait between passes over objects whose kind the API server
/// does not serve yet (a CRD just applied takes a moment to be served).
const UNSERVED_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// Applies the objects of `manifests` (name, contents) with server-side
/// apply, namespaces and CRDs first, then deletes `stale` (a 404 is fine:
/// gone already). An object whose kind is not served yet (its CRD was just
/// applied) is tried again, with progress logged, until `deadline`; Ctrl-C
/// stops the sync between objects. With `adopt` (right after bootstrap),
/// hct also takes sole ownership of what Talos created: the create's
/// `Update` entries in `managedFields` go, so a field hct later stops
/// applying is removed instead of staying with Talos. Err names the object
/// and the API server's reason.
pub async fn sync(
    api: &KubeApi<'_>,
    manifests: &[(String, String)],
    stale: &[ObjectRef],
    adopt: bool,
    deadline: &Deadline,
) -> Result<(), String> {
    let mut objects = Vec::new();
    for (name, text) in manifests {
        for object in self::objects(text).map_err(|e| format!("manifest {name}: {e}"))? {
            objects.push((name.clone(), object));
        }
    }
    let mut mapper = Mapper::default();
    let manager = if adopt {
        Manager::HctAdopting
    } else {
        Manager::Hct
    };
    apply_all(api, &mut mapper, objects, manager, deadline).await?;
    delete_all(api, &mut mapper, stale, deadline).await
}

/// Who applies: hct for its manifests (taking over what Talos created,
/// when adopting), or Talos' own field manager for the manifests Talos
/// renders, as `talosctl upgrade-k8s` applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Hct,
    HctAdopting,
    Talos,
}

impl Manager {
    fn name(self) -> &'static str {
        match self {
            Self::Hct | Self::HctAdopting => FIELD_MANAGER,
            Self::Talos => TALOS_FIELD_MANAGER,
        }
    }
}

/// Applies `objects` (each with the name of its manifest) with server-side
/// apply as `manager`, forcing conflicts: namespaces and CRDs first, kinds
/// not served yet retried until `deadline`.
pub async fn apply(
    api: &KubeApi<'_>,
    objects: Vec<(String, Value)>,
    manager: Manager,
    deadline: &Deadline,
) -> Result<(), String> {
    apply_all(api, &mut Mapper::default(), objects, manager, deadline).await
}

async fn apply_all(
    api: &KubeApi<'_>,
    mapper: &mut Mapper,
    mut objects: Vec<(String, Value)>,
    manager: Manager,
    deadline: &Deadline,
) -> Result<(), String> {
    let rank = |o: &Value| match o["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    objects.sort_by_key(|(_, o)| rank(o));
    let mut pending: Vec<&(String, Value)> = objects.iter().collect();
    let started = std::time::Instant::now();
    for pass in 1.. {
        let mut unserved = Vec::new();
        for entry in pending {
            stopped(deadline)?;
            let (manifest, object) = entry;
            let Some(id) = ObjectRef::of(object) else {
                continue;
            };
            let Some(path) = mapper.path(api, &id).await? else {
                unserved.push(entry);
                continue;
            };
            apply_one(api, manifest, &id, &path, object, manager).await?;
        }
        if unserved.is_empty() {
            break;
        }
        let names: Vec<String> = unserved
            .iter()
            .filter_map(|(m, o)| ObjectRef::of(o).map(|id| format!("{m}: {id}")))
            .collect();
        if deadline.is_past() {
            return Err(format!(
                "the API server serves no kind of {} (waited {}s for their CRDs)",
                names.join(", "),
                started.elapsed().as_secs()
            ));
        }
        tracing::info!(
            "bootstrap manifests: waiting for the API server to serve the kinds of {}, \
             pass {pass}, {}s",
            names.join(", "),
            started.elapsed().as_secs()
        );
        deadline
            .sleep(
                deadline.pace().scaled(UNSERVED_RETRY),
                "applying the bootstrap manifests",
            )
            .await
            .map_err(|e| e.to_string())?;
        // Discover again: a CRD may have become served.
        for (_, object) in &unserved {
            if let Some(version) = object["apiVersion"].as_str() {
                mapper.versions.remove(version);
            }
        }
        pending = unserved;
    }
    Ok(())
}

async fn delete_all(
    api: &KubeApi<'_>,
    mapper: &mut Mapper,
    stale: &[ObjectRef],
    deadline: &Deadline,
) -> Result<(), String> {
    for id in stale {
        stopped(deadline)?;
        // A kind no longer served (its CRD went first): nothing to delete.
        // A failed discovery is an error: the object may still be there.
        let Some(path) = mapper.path(api, id).await? else {
            continue;
        };
        let answer = api
            .call(
                "DELETE",
                &path,
                Some("application/json"),
                br#"{"propagationPolicy":"Background"}"#,
            )
            .await?;
        if !matches!(answer.status, 200 | 202 | 404) {
            return Err(format!(
                "deleting {id}: HTTP {}: {}",
                answer.status,
                answer.message()
            ));
        }
    }
    Ok(())
}

/// Err once Terraform asked to stop.
fn stopped(deadline: &Deadline) -> Result<(), String> {
    if deadline.cancel().is_cancelled() {
        return Err("stopped (Terraform asked the provider to stop)".into());
    }
    Ok(())
}

async fn apply_one(
    api: &KubeApi<'_>,
    manifest: &str,
    id: &ObjectRef,
    path: &str,
    object: &Value,
    manager: Manager,
) -> Result<(), String> {
    let query = apply_query(path, manager.name(), false);
    let body = serde_json::to_vec(object).map_err(|e| e.to_string())?;
    let answer = api
        .call("PATCH", &query, Some("application/apply-patch+yaml"), &body)
        .await?;
    if !matches!(answer.status, 200 | 201) {
        return Err(format!(
            "manifest {manifest}: applying {id}: HTTP {}: {}",
            answer.status,
            answer.message()
        ));
    }
    if manager == Manager::HctAdopting {
        take_ownership(api, path, &answer.body)
            .await
            .map_err(|why| format!("manifest {manifest}: adopting {id}: {why}"))?;
    }
    Ok(())
}

/// The query of a forced server-side apply to `path` as `manager`; with
/// `dry_run`, one the API server only answers.
pub(super) fn apply_query(path: &str, manager: &str, dry_run: bool) -> String {
    let dry_run = if dry_run { "&dryRun=All" } else { "" };
    format!("{path}?fieldManager={manager}&force=true{dry_run}")
}

/// The managedFields without the entries of plain writes (operation
/// `Update` on the object itself, such as Talos' create); None when there
/// are none to drop.
fn without_creates(object: &Value) -> Option<Vec<Value>> {
    let entries = object["metadata"]["managedFields"].as_array()?;
    let kept: Vec<Value> = entries
        .iter()
        .filter(|e| e["operation"] != "Update" || e.get("subresource").is_some())
        .cloned()
        .collect();
    (kept.len() < entries.len()).then_some(kept)
}

async fn take_ownership(api: &KubeApi<'_>, path: &str, applied: &str) -> Result<(), String> {
    let object: Value = serde_json::from_str(applied).map_err(|e| e.to_string())?;
    let Some(kept) = without_creates(&object) else {
        return Ok(());
    };
    let patch = serde_json::json!({"metadata": {
        "managedFields": kept,
        "resourceVersion": object["metadata"]["resourceVersion"],
    }});
    let body = serde_json::to_vec(&patch).map_err(|e| e.to_string())?;
    let answer = api
        .call("PATCH", path, Some("application/merge-patch+json"), &body)
        .await?;
    if answer.status == 200 {
        Ok(())
    } else {
        Err(format!("HTTP {}: {}", answer.status, answer.message()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_objects_of_a_manifest() {
        let text = "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n---\n\
                    apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cilium\n  namespace: kube-system\n";
        let found = refs(text).unwrap();
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "v1 Namespace /extra",
                "apps/v1 DaemonSet kube-system/cilium"
            ]
        );
        assert_eq!(ObjectRef::parse(&shown[1]).as_ref(), Some(&found[1]));
        assert!(refs("kind: x\n").unwrap_err().contains("document 1"));
        assert!(refs("a: [").is_err());
    }

    #[test]
    fn one_object_under_another_version_or_the_default_namespace_named() {
        let at = |text: &str| ObjectRef::parse(text).unwrap();
        let hpa = at("autoscaling/v2 HorizontalPodAutoscaler /web");
        assert!(hpa.same_object(&at(
            "autoscaling/v2beta2 HorizontalPodAutoscaler default/web"
        )));
        assert!(!hpa.same_object(&at("autoscaling/v2 HorizontalPodAutoscaler other/web")));
        assert!(!hpa.same_object(&at("other.io/v2 HorizontalPodAutoscaler /web")));
        assert!(!hpa.same_object(&at("autoscaling/v2 HorizontalPodAutoscaler /api")));
        assert!(at("v1 Namespace /extra").same_object(&at("v1 Namespace /extra")));
        assert!(!at("v1 ConfigMap /extra").same_object(&at("v1 Namespace /extra")));
    }

    #[test]
    fn adopting_drops_plain_writes_only() {
        let object = serde_json::json!({"metadata": {"managedFields": [
            {"manager": "talos", "operation": "Update"},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status"},
            {"manager": "hct", "operation": "Apply"},
        ]}});
        let kept = without_creates(&object).unwrap();
        let managers: Vec<&str> = kept.iter().filter_map(|e| e["manager"].as_str()).collect();
        assert_eq!(managers, ["kube-controller-manager", "hct"]);
        assert_eq!(
            without_creates(&serde_json::json!({"metadata": {"managedFields": [kept[1]]}})),
            None
        );
    }
}
