//! JSON Patch (RFC 6902) on the v1alpha1 document: `add`, `remove`,
//! `replace`, `move`, `copy`, `test`, with JSON Pointer paths (RFC 6901).
//! Like Talos' library (evanphx/json-patch)
//! `add` needs the parent to exist, and `remove`/`replace`/`test` the target.

use serde_json::{Map, Value};

use super::PatchError;

pub(super) fn apply(documents: &mut [Value], operations: &[Value]) -> Result<(), PatchError> {
    let Some(document) = super::super::documents::v1alpha1_mut(documents) else {
        return Err(PatchError::Unrecognised(
            "there is no v1alpha1 document to patch",
        ));
    };
    for (index, operation) in operations.iter().enumerate() {
        let op = Operation::parse(operation).map_err(|reason| PatchError::Operation {
            index,
            op: text_field(operation, "op"),
            path: text_field(operation, "path"),
            reason,
        })?;
        op.apply(document).map_err(|reason| PatchError::Operation {
            index,
            op: op.name.to_owned(),
            path: op.path_text.to_owned(),
            reason,
        })?;
    }
    Ok(())
}

/// A field's text for messages, or `?`.
fn text_field(operation: &Value, field: &str) -> String {
    operation
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned()
}

struct Operation<'a> {
    name: &'a str,
    path_text: &'a str,
    path: Vec<String>,
    from: Option<Vec<String>>,
    value: Option<&'a Value>,
}

impl<'a> Operation<'a> {
    fn parse(operation: &'a Value) -> Result<Self, String> {
        let fields = operation
            .as_object()
            .ok_or("an operation must be a mapping with op and path")?;
        let string = |field: &str| -> Result<&'a str, String> {
            match fields.get(field) {
                Some(Value::String(text)) => Ok(text),
                Some(_) => Err(format!("`{field}` must be a string")),
                None => Err(format!("`{field}` is missing")),
            }
        };
        let name = string("op")?;
        let path_text = string("path")?;
        let path = pointer(path_text)?;
        let (needs_value, needs_from) = match name {
            "add" | "replace" | "test" => (true, false),
            "remove" => (false, false),
            "move" | "copy" => (false, true),
            _ => return Err("op must be add, remove, replace, move, copy or test".into()),
        };
        let value = fields.get("value");
        if needs_value && value.is_none() {
            return Err("`value` is missing".into());
        }
        let from = if needs_from {
            Some(pointer(string("from")?)?)
        } else {
            None
        };
        Ok(Self {
            name,
            path_text,
            path,
            from,
            value,
        })
    }

    fn apply(&self, document: &mut Value) -> Result<(), String> {
        let value = || self.value.cloned().unwrap_or(Value::Null);
        match self.name {
            "add" => add(document, &self.path, value()),
            "remove" => remove(document, &self.path).map(drop),
            "replace" => {
                let target = get_mut(document, &self.path).ok_or("path not found")?;
                *target = value();
                Ok(())
            }
            "test" => {
                let actual = get_mut(document, &self.path).ok_or("path not found")?;
                if equal(actual, &value()) {
                    Ok(())
                } else {
                    Err("test failed: the value differs".into())
                }
            }
            "move" => {
                let from = self.from.as_deref().unwrap_or_default();
                if self.path.len() > from.len() && self.path.starts_with(from) {
                    return Err("cannot move a value into itself".into());
                }
                let moved = remove(document, from).map_err(|e| format!("from: {e}"))?;
                add(document, &self.path, moved)
            }
            "copy" => {
                let from = self.from.as_deref().unwrap_or_default();
                let copied = get_mut(document, from)
                    .ok_or("from: path not found")?
                    .clone();
                add(document, &self.path, copied)
            }
            _ => Err("unsupported op".into()),
        }
    }
}

/// RFC 6901: `""` is the whole document, else `/`-separated tokens with
/// `~1` for `/` and `~0` for `~`.
fn pointer(text: &str) -> Result<Vec<String>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let rest = text
        .strip_prefix('/')
        .ok_or("a JSON pointer must start with /")?;
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => return Err("`~` must be followed by 0 or 1".to_owned()),
                }
            }
            Ok(out)
        })
        .collect()
}

fn get_mut<'a>(document: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(document, |value, token| match value {
        Value::Object(map) => map.get_mut(token),
        Value::Array(items) => {
            let position = index(token, items.len()).ok()?;
            items.get_mut(position)
        }
        _ => None,
    })
}

/// An existing item's index: digits, no leading zero, in range.
fn index(token: &str, len: usize) -> Result<usize, String> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return Err("list index must be a number".into());
    }
    match token.parse::<usize>() {
        Ok(position) if position < len => Ok(position),
        _ => Err("list index out of range".into()),
    }
}

fn add(document: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        *document = value;
        return Ok(());
    };
    match get_mut(document, parents).ok_or("parent path not found")? {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) if last == "-" => {
            items.push(value);
            Ok(())
        }
        Value::Array(items) => {
            // Inserting may also append: index == len is allowed.
            let position = index(last, items.len() + 1)?;
            items.insert(position, value);
            Ok(())
        }
        _ => Err("parent is neither a mapping nor a list".into()),
    }
}

fn remove(document: &mut Value, path: &[String]) -> Result<Value, String> {
    let (last, parents) = path
        .split_last()
        .ok_or("cannot remove the whole document")?;
    match get_mut(document, parents).ok_or("path not found")? {
        Value::Object(map) => map
            .shift_remove(last)
            .ok_or_else(|| "path not found".into()),
        Value::Array(items) => {
            let position = index(last, items.len())?;
            Ok(items.remove(position))
        }
        _ => Err("path not found".into()),
    }
}

/// JSON equality as RFC 6902 `test` defines it: numbers by value.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => objects_equal(x, y),
        _ => a == b,
    }
}

fn objects_equal(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(key, value)| y.get(key).is_some_and(|other| equal(value, other)))
}
