//! Values as Terraform exchanges them: possibly null, possibly not yet known.

use std::collections::BTreeMap;

use super::types::Type;

#[derive(Debug, Clone, Default, PartialEq)]
pub enum Value {
    #[default]
    Null,
    /// Known only after apply (e.g. an id computed by another resource).
    Unknown,
    Bool(bool),
    Number(Number),
    String(String),
    /// Lists, sets and tuples.
    List(Vec<Value>),
    /// Maps and objects.
    Map(BTreeMap<String, Value>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }

    /// The number as an integer, if it is one.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Number::Int(i) => Some(i),
            Number::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(f as i64),
            Number::Float(_) => None,
        }
    }
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown)
    }

    /// True when neither this value nor anything inside it is unknown.
    pub fn is_wholly_known(&self) -> bool {
        match self {
            Value::Unknown => false,
            Value::List(items) => items.iter().all(Value::is_wholly_known),
            Value::Map(items) => items.values().all(Value::is_wholly_known),
            _ => true,
        }
    }

    /// An attribute of an object (Null when absent or when self is not an object).
    pub fn get(&self, name: &str) -> &Value {
        match self {
            Value::Map(items) => items.get(name).unwrap_or(&Value::Null),
            _ => &Value::Null,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&BTreeMap<String, Value>> {
        match self {
            Value::Map(items) => Some(items),
            _ => None,
        }
    }

    pub fn string(s: impl Into<String>) -> Self {
        Value::String(s.into())
    }

    pub fn int(i: i64) -> Self {
        Value::Number(Number::Int(i))
    }

    pub fn strings<I, S>(items: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Value::List(items.into_iter().map(Value::string).collect())
    }

    pub fn object<I, K>(attributes: I) -> Self
    where
        I: IntoIterator<Item = (K, Value)>,
        K: Into<String>,
    {
        Value::Map(attributes.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// Replaces every null attribute of an object type that the value does
    /// not carry, so the value conforms to `ty` (Terraform wants every
    /// attribute of an object present on the wire).
    pub fn conform(self, ty: &Type) -> Value {
        match (self, ty) {
            (Value::Map(mut items), Type::Object(attributes)) => {
                items.retain(|name, _| attributes.contains_key(name));
                for (name, attribute_type) in attributes {
                    let value = items.remove(name).unwrap_or(Value::Null);
                    items.insert(name.clone(), value.conform(attribute_type));
                }
                Value::Map(items)
            }
            (Value::Map(items), Type::Map(element)) => Value::Map(
                items
                    .into_iter()
                    .map(|(k, v)| (k, v.conform(element)))
                    .collect(),
            ),
            (Value::List(items), Type::List(element) | Type::Set(element)) => {
                Value::List(items.into_iter().map(|v| v.conform(element)).collect())
            }
            (value, _) => value,
        }
    }

    /// A JSON rendering of a known value, for messages and hashing.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as Json;
        match self {
            Value::Null | Value::Unknown => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(Number::Int(i)) => Json::from(*i),
            Value::Number(Number::Float(f)) => Json::from(*f),
            Value::String(s) => Json::String(s.clone()),
            Value::List(items) => Json::Array(items.iter().map(Value::to_json).collect()),
            Value::Map(items) => Json::Object(
                items
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::string(s)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::int(i)
    }
}

impl From<Option<String>> for Value {
    fn from(s: Option<String>) -> Self {
        s.map_or(Value::Null, Value::String)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conform_fills_missing_attributes_with_null_and_drops_strangers() {
        let ty = Type::Object(BTreeMap::from([
            ("a".to_string(), Type::String),
            ("b".to_string(), Type::Number),
        ]));
        let value = Value::object([("a", Value::from("x")), ("zzz", Value::from(true))]);
        assert_eq!(
            value.conform(&ty),
            Value::object([("a", Value::from("x")), ("b", Value::Null)])
        );
    }

    #[test]
    fn wholly_known_looks_inside_collections() {
        let value = Value::object([("a", Value::List(vec![Value::from(1), Value::Unknown]))]);
        assert!(!value.is_wholly_known());
        assert!(Value::object([("a", Value::Null)]).is_wholly_known());
    }
}
