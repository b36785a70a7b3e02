//! Drift of hct's objects, for a refresh: what a server-side apply of the
//! manifests (field manager `hct`, forced) would change in the cluster now,
//! asked of the API server with `dryRun=All` and compared with the object
//! as it is. A field edited by hand (`kubectl edit`, another field manager)
//! shows; a field hct never applied, such as a label added by hand, does
//! not: it is not hct's to take back. A deleted object shows as missing.

use std::fmt;

use serde_json::Value;

use super::KubeApi;
use super::manifests::{self, FIELD_MANAGER, Mapper, ObjectRef};

/// At most this many fields named per object.
const FIELDS_SHOWN: usize = 4;

/// One object the cluster holds otherwise than hct applied it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub manifest: String,
    pub object: ObjectRef,
    pub change: Change,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Deleted.
    Missing,
    /// Its kind is no longer served (its CRD was deleted).
    Unserved,
    /// The fields an apply would set back, as paths (`data.ipam`).
    Fields(Vec<String>),
}

impl fmt::Display for Drift {
    /// `manifest cilium: v1 ConfigMap kube-system/cilium-config: data.ipam changed`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "manifest {}: {}: ", self.manifest, self.object)?;
        match &self.change {
            Change::Missing => write!(f, "deleted"),
            Change::Unserved => write!(f, "its kind is no longer served"),
            Change::Fields(paths) => write!(f, "{} changed", paths.join(", ")),
        }
    }
}

/// The objects of `manifests` (name, contents) that differ from what an
/// apply of them would make; Err when the API server could not be asked.
/// An object the API server will not dry-run (say, a webhook without
/// `sideEffects: None` refuses dry runs) is left out, with a log line.
pub async fn drifted(
    api: &KubeApi<'_>,
    manifests: &[(String, String)],
) -> Result<Vec<Drift>, String> {
    let mut mapper = Mapper::default();
    let mut found = Vec::new();
    for (manifest, text) in manifests {
        let objects = manifests::objects(text).map_err(|e| format!("manifest {manifest}: {e}"))?;
        for object in objects {
            let Some(id) = ObjectRef::of(&object) else {
                continue;
            };
            let change = match mapper.path(api, &id).await? {
                None => Some(Change::Unserved),
                Some(path) => match compare(api, &path, &object).await? {
                    Ok(change) => change,
                    Err(why) => {
                        tracing::warn!("not checking {id} of manifest {manifest} for edits: {why}");
                        None
                    }
                },
            };
            if let Some(change) = change {
                found.push(Drift {
                    manifest: manifest.clone(),
                    object: id,
                    change,
                });
            }
        }
    }
    Ok(found)
}

/// The object at `path` against a dry run of applying `object` there:
/// Ok(Err) when the API server refuses to dry-run it (400, 405, 422: the
/// object is skipped), Err when it could not tell (no answer, or any other
/// status: the next control plane is asked, state stays). Answers are told
/// by their `Status` message alone: another body may be the object itself,
/// a Secret's data included.
///
/// The object is read again after the dry run: a controller that wrote it
/// in between (the deployment controller's revision annotation, right
/// after an apply) would otherwise show as drift. Compared only when both
/// reads agree, a few tries at most; an object that keeps changing is
/// skipped.
async fn compare(
    api: &KubeApi<'_>,
    path: &str,
    object: &Value,
) -> Result<Result<Option<Change>, String>, String> {
    for _ in 0..READS {
        let Some(live) = read(api, path).await? else {
            return Ok(Ok(Some(Change::Missing)));
        };
        let applied = match dry_run(api, path, object).await? {
            Ok(Some(applied)) => applied,
            Ok(None) => return Ok(Ok(Some(Change::Missing))),
            Err(refused) => return Ok(Err(refused)),
        };
        match read(api, path).await? {
            Some(again) if again == live => {
                let paths = differences(&live, &applied);
                return Ok(Ok((!paths.is_empty()).then_some(Change::Fields(paths))));
            }
            _ => continue,
        }
    }
    Ok(Err(format!("{path} kept changing while it was read")))
}

/// How often [`compare`] reads an object that changes under it.
const READS: usize = 3;

fn said(what: &str, path: &str, answer: &super::Answer) -> String {
    let message = answer.status_message().unwrap_or_default();
    format!("{what} {path}: HTTP {} {message}", answer.status)
}

fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Value>(text)
        .map(comparable)
        .map_err(|e| e.to_string())
}

/// The object as it is, comparable; None when it does not exist.
async fn read(api: &KubeApi<'_>, path: &str) -> Result<Option<Value>, String> {
    let live = api.call("GET", path, None, b"").await?;
    match live.status {
        404 => Ok(None),
        200 => parse(&live.body).map(Some),
        _ => Err(said("reading", path, &live)),
    }
}

/// The object as applying `object` would make it, comparable: Ok(None)
/// when it would be created (deleted since the read), Ok(Err) when the API
/// server refuses the dry run.
async fn dry_run(
    api: &KubeApi<'_>,
    path: &str,
    object: &Value,
) -> Result<Result<Option<Value>, String>, String> {
    let body = serde_json::to_vec(object).map_err(|e| e.to_string())?;
    let query = manifests::apply_query(path, FIELD_MANAGER, true);
    let applied = api
        .call("PATCH", &query, Some("application/apply-patch+yaml"), &body)
        .await?;
    match applied.status {
        200 => parse(&applied.body).map(|v| Ok(Some(v))),
        201 => Ok(Ok(None)),
        400 | 405 | 422 => Ok(Err(said("a dry-run apply of", path, &applied))),
        _ => Err(said("a dry-run apply of", path, &applied)),
    }
}

/// The object without what every write changes (managed fields, versions)
/// and without its status, which an apply does not set.
fn comparable(mut object: Value) -> Value {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for key in ["managedFields", "resourceVersion", "generation"] {
            metadata.remove(key);
        }
    }
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    object
}

/// The paths where `live` and `applied` differ: the first few, and how
/// many more.
fn differences(live: &Value, applied: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(live, applied, "", &mut out);
    if out.len() > FIELDS_SHOWN {
        let more = out.len() - FIELDS_SHOWN;
        out.truncate(FIELDS_SHOWN);
        out.push(format!("{more} more"));
    }
    out
}

fn walk(live: &Value, applied: &Value, at: &str, out: &mut Vec<String>) {
    if live == applied {
        return;
    }
    let join = |key: &str| {
        if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        }
    };
    match (live, applied) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let none = Value::Null;
                walk(
                    a.get(key).unwrap_or(&none),
                    b.get(key).unwrap_or(&none),
                    &join(key),
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (n, (x, y)) in a.iter().zip(b).enumerate() {
                walk(x, y, &format!("{at}[{n}]"), out);
            }
        }
        _ => out.push(if at.is_empty() {
            "the object".into()
        } else {
            at.into()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_fields_an_apply_would_set_back() {
        let live = json!({
            "metadata": {"name": "c", "resourceVersion": "7", "managedFields": [{"manager": "kubectl-edit"}]},
            "data": {"ipam": "kubernetes", "kept": "x"},
            "spec": {"containers": [{"image": "a"}, {"image": "b"}], "ports": [1]},
            "status": {"phase": "Running"},
        });
        let applied = json!({
            "metadata": {"name": "c", "resourceVersion": "7", "managedFields": [{"manager": "hct"}]},
            "data": {"ipam": "cluster-pool", "kept": "x"},
            "spec": {"containers": [{"image": "a"}, {"image": "c"}], "ports": [1, 2]},
        });
        assert_eq!(
            differences(&comparable(live.clone()), &comparable(applied)),
            ["data.ipam", "spec.containers[1].image", "spec.ports"]
        );
        assert!(differences(&comparable(live.clone()), &comparable(live)).is_empty());
        let many = |v: &str| json!({"data": {"a": v, "b": v, "c": v, "d": v, "e": v, "f": v}});
        assert_eq!(
            differences(&many("1"), &many("2")),
            ["data.a", "data.b", "data.c", "data.d", "2 more"]
        );
    }

    #[test]
    fn says_what_drifted_in_one_line() {
        let drift = |change| Drift {
            manifest: "cilium".into(),
            object: ObjectRef::parse("v1 ConfigMap kube-system/cilium-config").unwrap(),
            change,
        };
        assert_eq!(
            drift(Change::Fields(vec!["data.ipam".into()])).to_string(),
            "manifest cilium: v1 ConfigMap kube-system/cilium-config: data.ipam changed"
        );
        assert!(drift(Change::Missing).to_string().ends_with(": deleted"));
        assert!(
            drift(Change::Unserved)
                .to_string()
                .ends_with("no longer served")
        );
    }
}
