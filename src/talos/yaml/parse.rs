//! YAML text to `serde_json::Value` documents.

use saphyr::{LoadableYamlNode, ScalarOwned, YamlOwned};
use serde_json::{Map, Number, Value};

/// Deeper nesting than any Talos document needs; the limit keeps hostile
/// input from exhausting the stack.
const MAX_DEPTH: usize = 64;

/// Why YAML text could not be read. Messages name a position or a path,
/// never the text itself (it may hold secrets).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    #[error("invalid YAML at line {line}, column {column}: {reason}")]
    Syntax {
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("unsupported YAML at {path}: {reason}")]
    Unsupported { path: String, reason: &'static str },
}

/// Every document of a (possibly multi-document) YAML text. Empty documents
/// come back as `Value::Null`; an empty text has no documents.
pub(crate) fn parse_documents(text: &str) -> Result<Vec<Value>, YamlError> {
    let documents = YamlOwned::load_from_str(text).map_err(|error| YamlError::Syntax {
        line: error.marker().line(),
        column: error.marker().col() + 1,
        reason: error.info().to_owned(),
    })?;
    documents
        .into_iter()
        .map(|document| convert(document, &mut Vec::new()))
        .collect()
}

fn convert(node: YamlOwned, path: &mut Vec<String>) -> Result<Value, YamlError> {
    if path.len() > MAX_DEPTH {
        return Err(unsupported(path, "nested too deeply"));
    }
    match node {
        YamlOwned::Value(scalar) => scalar_value(scalar, path),
        YamlOwned::Sequence(items) => {
            let mut values = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                path.push(format!("[{index}]"));
                values.push(convert(item, path)?);
                path.pop();
            }
            Ok(Value::Array(values))
        }
        YamlOwned::Mapping(entries) => {
            let mut map = Map::new();
            for (key, value) in entries {
                let key = key_text(key, path)?;
                path.push(key.clone());
                let value = convert(value, path)?;
                path.pop();
                map.insert(key, value);
            }
            Ok(Value::Object(map))
        }
        YamlOwned::Tagged(..) => Err(unsupported(path, "custom tags are not supported")),
        YamlOwned::Alias(_) | YamlOwned::BadValue | YamlOwned::Representation(..) => Err(
            unsupported(path, "unresolvable value (alias or bad scalar)"),
        ),
    }
}

fn scalar_value(scalar: ScalarOwned, path: &[String]) -> Result<Value, YamlError> {
    Ok(match scalar {
        ScalarOwned::Null => Value::Null,
        ScalarOwned::Boolean(flag) => Value::Bool(flag),
        ScalarOwned::Integer(int) => Value::Number(int.into()),
        ScalarOwned::FloatingPoint(float) => Number::from_f64(float.into_inner())
            .map(Value::Number)
            .ok_or_else(|| unsupported(path, "infinite or NaN numbers are not supported"))?,
        ScalarOwned::String(text) => Value::String(text),
    })
}

/// Mapping keys become strings, as Talos' decoder reads them; `1: x` is key "1".
fn key_text(key: YamlOwned, path: &[String]) -> Result<String, YamlError> {
    match key {
        YamlOwned::Value(ScalarOwned::String(text)) => Ok(text),
        YamlOwned::Value(ScalarOwned::Integer(int)) => Ok(int.to_string()),
        YamlOwned::Value(ScalarOwned::Boolean(flag)) => Ok(flag.to_string()),
        _ => Err(unsupported(path, "mapping keys must be strings")),
    }
}

fn unsupported(path: &[String], reason: &'static str) -> YamlError {
    let path = if path.is_empty() {
        "the document root".to_owned()
    } else {
        path.join(".").replace(".[", "[")
    };
    YamlError::Unsupported { path, reason }
}
