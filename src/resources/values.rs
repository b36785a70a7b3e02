//! Small helpers for reading and writing Terraform object values in the
//! resources' model code.

use std::collections::BTreeMap;

use crate::provider::Applied;
use crate::tf::{Diagnostic, Value};

/// Sets attribute `name` of an object value.
pub fn set(value: &mut Value, name: &str, to: Value) {
    if let Value::Map(items) = value {
        items.insert(name.to_string(), to);
    }
}

/// Sets the attribute at `path` (attribute names, outer first) where its
/// object exists; nothing when a parent is null or missing.
pub fn set_at<S: AsRef<str>>(value: &mut Value, path: &[S], to: Value) {
    match path {
        [] => {}
        [name] => set(value, name.as_ref(), to),
        [outer, rest @ ..] => {
            if let Value::Map(items) = value
                && let Some(inner) = items.get_mut(outer.as_ref())
            {
                set_at(inner, rest, to);
            }
        }
    }
}

/// The value at `path`, as [`set_at`] names it (null when missing).
pub fn get_at<'a, S: AsRef<str>>(value: &'a Value, path: &[S]) -> &'a Value {
    path.iter().fold(value, |v, name| v.get(name.as_ref()))
}

/// The object attribute `name`, created empty when missing.
pub fn object_mut<'a>(value: &'a mut Value, name: &str) -> &'a mut Value {
    match value {
        Value::Map(items) => items
            .entry(name.to_string())
            .or_insert_with(|| Value::Map(Default::default())),
        other => other,
    }
}

/// An apply that changed nothing: `state` stays, with the error.
pub fn failed(state: Value, diagnostic: Diagnostic) -> Applied {
    Applied {
        new_state: state,
        private: Vec::new(),
        diagnostics: diagnostic.into(),
    }
}

pub fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_map()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

pub fn string_list(value: &Value) -> Vec<String> {
    value
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

pub fn map_value(map: &BTreeMap<String, String>) -> Value {
    Value::Map(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_paths_are_set_where_their_objects_exist() {
        let mut value = Value::object([
            ("a", Value::object([("b", Value::from("x"))])),
            ("n", Value::Null),
        ]);
        set_at(&mut value, &["a", "b"], Value::Null);
        assert!(get_at(&value, &["a", "b"]).is_null());
        assert!(value.get("a").as_map().is_some(), "the parent stays");
        // A null parent stays null: nothing is made under it.
        set_at(&mut value, &["n", "b"], Value::from("y"));
        assert!(value.get("n").is_null());
        set_at(&mut value, &["a", "b"], Value::from("z"));
        assert_eq!(get_at(&value, &["a", "b"]), &Value::from("z"));
    }
}
