//! Terraform's type system as far as the wire needs it: the JSON form used in
//! schemas and in dynamic values.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Bool,
    Number,
    String,
    /// Any type; values carry their type with them on the wire.
    Dynamic,
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>),
    Tuple(Vec<Type>),
    Object(BTreeMap<String, Type>),
}

impl Type {
    pub fn list(element: Type) -> Self {
        Self::List(Box::new(element))
    }

    pub fn set(element: Type) -> Self {
        Self::Set(Box::new(element))
    }

    pub fn map(element: Type) -> Self {
        Self::Map(Box::new(element))
    }

    /// The JSON form Terraform uses for types, e.g. `["map","string"]`.
    pub fn to_json(&self) -> Json {
        match self {
            Type::Bool => json!("bool"),
            Type::Number => json!("number"),
            Type::String => json!("string"),
            Type::Dynamic => json!("dynamic"),
            Type::List(element) => json!(["list", element.to_json()]),
            Type::Set(element) => json!(["set", element.to_json()]),
            Type::Map(element) => json!(["map", element.to_json()]),
            Type::Tuple(elements) => {
                json!([
                    "tuple",
                    elements.iter().map(Type::to_json).collect::<Vec<_>>()
                ])
            }
            Type::Object(attributes) => {
                let attributes: serde_json::Map<String, Json> = attributes
                    .iter()
                    .map(|(name, ty)| (name.clone(), ty.to_json()))
                    .collect();
                json!(["object", attributes])
            }
        }
    }

    /// Parses the JSON form of a type (as found in dynamic values).
    pub fn from_json(json: &Json) -> Result<Self, String> {
        match json {
            Json::String(name) => match name.as_str() {
                "bool" => Ok(Type::Bool),
                "number" => Ok(Type::Number),
                "string" => Ok(Type::String),
                "dynamic" => Ok(Type::Dynamic),
                other => Err(format!("unknown primitive type {other:?}")),
            },
            Json::Array(parts) => {
                let kind = parts.first().and_then(Json::as_str).unwrap_or_default();
                let arg = parts
                    .get(1)
                    .ok_or_else(|| format!("type {kind:?} lacks its argument"))?;
                match kind {
                    "list" => Ok(Type::list(Type::from_json(arg)?)),
                    "set" => Ok(Type::set(Type::from_json(arg)?)),
                    "map" => Ok(Type::map(Type::from_json(arg)?)),
                    "tuple" => {
                        let elements = arg.as_array().ok_or("tuple type needs a list of types")?;
                        Ok(Type::Tuple(
                            elements
                                .iter()
                                .map(Type::from_json)
                                .collect::<Result<_, _>>()?,
                        ))
                    }
                    "object" => {
                        let attributes =
                            arg.as_object().ok_or("object type needs a map of types")?;
                        Ok(Type::Object(
                            attributes
                                .iter()
                                .map(|(name, ty)| Ok((name.clone(), Type::from_json(ty)?)))
                                .collect::<Result<_, String>>()?,
                        ))
                    }
                    other => Err(format!("unknown type constructor {other:?}")),
                }
            }
            other => Err(format!("not a type: {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_round_trip_through_json() {
        let ty = Type::Object(BTreeMap::from([
            ("ips".to_string(), Type::map(Type::list(Type::String))),
            ("n".to_string(), Type::Number),
            (
                "pair".to_string(),
                Type::Tuple(vec![Type::Bool, Type::Dynamic]),
            ),
        ]));
        let json = ty.to_json();
        assert_eq!(
            json.to_string(),
            r#"["object",{"ips":["map",["list","string"]],"n":"number","pair":["tuple",["bool","dynamic"]]}]"#
        );
        assert_eq!(Type::from_json(&json).unwrap(), ty);
    }
}
