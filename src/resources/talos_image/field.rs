//! One attribute of a Terraform value, typed: null, not known yet, or a
//! known value; and how known values of each type look on the wire.

use std::collections::BTreeMap;

use crate::tf::Value;

/// One attribute as Terraform sent it.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Field<T> {
    #[default]
    Null,
    /// Known only after apply.
    Unknown,
    Known(T),
}

impl<T> Field<T> {
    pub fn known(&self) -> Option<&T> {
        match self {
            Field::Known(value) => Some(value),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Field::Null)
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Field::Unknown)
    }
}

impl<T: Wire> Field<T> {
    /// A value of another type than the schema's reads as null.
    pub(super) fn decode(value: &Value) -> Self {
        match value {
            Value::Null => Field::Null,
            Value::Unknown => Field::Unknown,
            value => T::decode(value).map_or(Field::Null, Field::Known),
        }
    }

    pub(super) fn encode(&self) -> Value {
        match self {
            Field::Null => Value::Null,
            Field::Unknown => Value::Unknown,
            Field::Known(value) => value.encode(),
        }
    }
}

/// How a known attribute value looks on the wire.
pub(super) trait Wire: Sized {
    fn decode(value: &Value) -> Option<Self>;
    fn encode(&self) -> Value;
}

impl Wire for String {
    fn decode(value: &Value) -> Option<Self> {
        value.as_str().map(str::to_string)
    }

    fn encode(&self) -> Value {
        Value::from(self.clone())
    }
}

impl Wire for bool {
    fn decode(value: &Value) -> Option<Self> {
        value.as_bool()
    }

    fn encode(&self) -> Value {
        Value::from(*self)
    }
}

impl<T: Wire> Wire for Vec<Field<T>> {
    fn decode(value: &Value) -> Option<Self> {
        Some(value.as_list()?.iter().map(Field::decode).collect())
    }

    fn encode(&self) -> Value {
        Value::List(self.iter().map(Field::encode).collect())
    }
}

impl<T: Wire> Wire for BTreeMap<String, Field<T>> {
    fn decode(value: &Value) -> Option<Self> {
        let map = value.as_map()?;
        Some(
            map.iter()
                .map(|(k, v)| (k.clone(), Field::decode(v)))
                .collect(),
        )
    }

    fn encode(&self) -> Value {
        Value::Map(self.iter().map(|(k, v)| (k.clone(), v.encode())).collect())
    }
}
