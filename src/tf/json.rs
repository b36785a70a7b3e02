//! The JSON form of values, used by Terraform for stored state.

use super::types::Type;
use super::value::{Number, Value};
use serde_json::Value as Json;

/// Reads stored JSON state as a value of type `ty`. State in JSON never holds
/// unknown values.
pub fn from_json(json: &Json, ty: &Type) -> Result<Value, String> {
    Ok(match (json, ty) {
        (Json::Null, _) => Value::Null,
        (Json::Bool(b), Type::Bool | Type::Dynamic) => Value::Bool(*b),
        (Json::Number(n), Type::Number | Type::Dynamic) => Value::Number(match n.as_i64() {
            Some(i) => Number::Int(i),
            None => Number::Float(n.as_f64().ok_or("number out of range")?),
        }),
        (Json::String(s), Type::Number) => Value::Number(match s.parse::<i64>() {
            Ok(i) => Number::Int(i),
            Err(_) => Number::Float(s.parse().map_err(|_| format!("not a number: {s:?}"))?),
        }),
        (Json::String(s), Type::String | Type::Dynamic) => Value::String(s.clone()),
        (Json::Array(items), Type::List(element) | Type::Set(element)) => Value::List(
            items
                .iter()
                .map(|item| from_json(item, element))
                .collect::<Result<_, _>>()?,
        ),
        (Json::Array(items), Type::Tuple(elements)) if items.len() == elements.len() => {
            Value::List(
                items
                    .iter()
                    .zip(elements)
                    .map(|(item, element)| from_json(item, element))
                    .collect::<Result<_, _>>()?,
            )
        }
        (Json::Object(items), Type::Map(element)) => Value::Map(
            items
                .iter()
                .map(|(k, v)| Ok((k.clone(), from_json(v, element)?)))
                .collect::<Result<_, String>>()?,
        ),
        (Json::Object(items), Type::Object(attributes)) => {
            // Attributes a newer schema added are null; ones it dropped are ignored.
            Value::Map(
                attributes
                    .iter()
                    .map(|(name, attribute_type)| {
                        let value = items.get(name).unwrap_or(&Json::Null);
                        from_json(value, attribute_type)
                            .map(|v| (name.clone(), v))
                            .map_err(|e| format!("{name}: {e}"))
                    })
                    .collect::<Result<_, String>>()?,
            )
        }
        (json, ty) => return Err(format!("{json} is not a {}", ty.to_json())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn reads_state_json_by_type_and_fills_new_attributes() {
        let ty = Type::Object(BTreeMap::from([
            ("id".to_string(), Type::String),
            ("count".to_string(), Type::Number),
            ("labels".to_string(), Type::map(Type::String)),
            ("added_later".to_string(), Type::Bool),
        ]));
        let value = from_json(
            &json!({"id": "abc", "count": 3, "labels": {"a": "b"}, "dropped": 1}),
            &ty,
        )
        .unwrap();
        assert_eq!(
            value,
            Value::object([
                ("id", Value::from("abc")),
                ("count", Value::from(3)),
                ("labels", Value::object([("a", Value::from("b"))])),
                ("added_later", Value::Null),
            ])
        );
        assert!(from_json(&json!({"count": "many"}), &ty).is_err());
    }
}
