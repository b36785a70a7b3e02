//! Server-side apply, as far as add-on manifests need it: each field
//! manager owns the fields it applied (kept in `metadata.managedFields` as
//! `FieldsV1`), an apply sets its fields, drops the ones it owned before
//! and no longer names (unless another manager owns them too), and fails
//! with a 409 Conflict when it would change a field another manager owns,
//! unless `force` takes the field over. Maps merge key by key; lists and
//! scalars are single fields (kube-apiserver merges some lists by key).
//! Merge patches (`application/merge-patch+json`, and strategic merge
//! patches, treated the same) are here too.

use serde_json::{Value, json};

use super::KubeError;
use super::fields::{Path, leaves, managers, write_managers};
use super::kinds::Resource;
use super::store::{ClusterStore, invalid};

fn related(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn at<'v>(value: &'v Value, path: &Path) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

fn remove(value: &mut Value, path: &Path) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = value;
    for key in parents {
        match node.get_mut(key) {
            Some(next) => node = next,
            None => return,
        }
    }
    if let Some(map) = node.as_object_mut() {
        map.remove(last);
    }
}

fn set(value: &mut Value, path: &Path, leaf: Value) {
    let mut node = value;
    for key in path {
        if !node.is_object() {
            *node = json!({});
        }
        node = node
            .as_object_mut()
            .expect("made a map")
            .entry(key.clone())
            .or_insert(Value::Null);
    }
    *node = leaf;
}

/// Server-side apply of `applied` by `manager`; the object and whether it
/// was created.
pub fn apply(
    store: &mut ClusterStore,
    resource: &Resource,
    namespace: &str,
    name: &str,
    applied: Value,
    manager: &str,
    force: bool,
) -> Result<(Value, bool), KubeError> {
    if manager.is_empty() {
        return Err(KubeError::BadRequest(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".into(),
        ));
    }
    let applied = store.admit(resource, namespace, Some(name), applied)?;
    if applied["metadata"].get("managedFields").is_some() {
        return Err(invalid(
            resource,
            name,
            "metadata.managedFields",
            "Forbidden: cannot be set in an apply patch",
        ));
    }
    let fields = leaves(&applied);
    let Some(old) = store.get(resource, namespace, name).cloned() else {
        let mut created = store.create(resource, namespace, applied, manager)?;
        let mut all = managers(&created);
        all.retain(|(m, _, _)| m != manager);
        all.push((manager.into(), "Apply".into(), fields));
        write_managers(&mut created, &all, store.now);
        let old = store
            .get(resource, namespace, name)
            .cloned()
            .expect("just created");
        return Ok((store.replace(resource, &old, created), true));
    };
    let mut all = managers(&old);
    let mut conflicts = Vec::new();
    for (other, operation, owned) in &all {
        if other == manager && operation == "Apply" {
            continue;
        }
        for field in &fields {
            if owned.iter().any(|p| related(p, field)) && at(&old, field) != at(&applied, field) {
                conflicts.push((other.clone(), format!(".{}", field.join("."))));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        conflicts.sort();
        conflicts.dedup();
        return Err(KubeError::ApplyConflict { conflicts });
    }
    let mine_before: Vec<Path> = all
        .iter()
        .filter(|(m, op, _)| m == manager && op == "Apply")
        .flat_map(|(_, _, f)| f.clone())
        .collect();
    let mut object = old.clone();
    for dropped in mine_before.iter().filter(|p| !fields.contains(p)) {
        let others_own = all.iter().any(|(m, op, owned)| {
            !(m == manager && op == "Apply") && owned.iter().any(|p| related(p, dropped))
        });
        if !others_own {
            remove(&mut object, dropped);
        }
    }
    for field in &fields {
        set(
            &mut object,
            field,
            at(&applied, field).cloned().unwrap_or(Value::Null),
        );
    }
    for (_, _, owned) in all.iter_mut() {
        owned.retain(|p| !fields.iter().any(|f| related(f, p)));
    }
    all.retain(|(m, op, _)| !(m == manager && op == "Apply"));
    all.push((manager.into(), "Apply".into(), fields));
    write_managers(&mut object, &all, store.now);
    Ok((store.replace(resource, &old, object), false))
}

/// RFC 7386 merge patch of `target` with `patch`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(patch) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let map = target.as_object_mut().expect("made a map");
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}
