//! Reading request bodies the way the API does: malformed JSON is a
//! `json_error`; fields of the wrong type or missing are `invalid_input`,
//! reported together with the name of every bad field.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde_json::{Map, Value};

use crate::errors::{ApiError, FieldErrors};
use crate::ids::Id;
use crate::labels::Labels;

pub struct Body {
    fields: Map<String, Value>,
    prefix: String,
    errors: FieldErrors,
}

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::Json(e.to_string()))?;
        Self::parse(&bytes)
    }
}

impl Body {
    /// An empty body reads as `{}`, since action calls often send none.
    pub fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::object(Map::new(), String::new()));
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(fields)) => Ok(Self::object(fields, String::new())),
            Ok(_) => Err(ApiError::Json("the body must be a JSON object".into())),
            Err(e) => Err(ApiError::Json(e.to_string())),
        }
    }

    fn object(fields: Map<String, Value>, prefix: String) -> Self {
        Self {
            fields,
            prefix,
            errors: FieldErrors::default(),
        }
    }

    fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn wrong(&mut self, name: &str, message: &str) {
        let path = self.path(name);
        self.errors.push(path, message);
    }

    /// The field's value; `null` counts as absent.
    fn get(&self, name: &str) -> Option<&Value> {
        self.fields.get(name).filter(|v| !v.is_null())
    }

    fn required<T>(&mut self, name: &str, value: Option<T>) -> Option<T> {
        if value.is_none() && self.get(name).is_none() {
            self.wrong(name, "is required");
        }
        value
    }

    /// Marks a field as unacceptable.
    pub fn reject(&mut self, name: &str, message: &str) {
        self.wrong(name, message);
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn str(&mut self, name: &str) -> Option<String> {
        match self.get(name)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.wrong(name, "must be a string");
                None
            }
        }
    }

    pub fn required_str(&mut self, name: &str) -> String {
        let value = self.str(name);
        self.required(name, value).unwrap_or_default()
    }

    pub fn bool(&mut self, name: &str) -> Option<bool> {
        match self.get(name)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.wrong(name, "must be a boolean");
                None
            }
        }
    }

    pub fn id(&mut self, name: &str) -> Option<Id> {
        match self.get(name)? {
            Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
            _ => {
                self.wrong(name, "must be an integer ID");
                None
            }
        }
    }

    pub fn required_id(&mut self, name: &str) -> Id {
        let value = self.id(name);
        self.required(name, value).unwrap_or_default()
    }

    /// A reference written as an ID (number) or a name (string).
    pub fn id_or_name(&mut self, name: &str) -> Option<String> {
        match self.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) if n.as_i64().is_some() => Some(n.to_string()),
            _ => {
                self.wrong(name, "must be an ID or a name");
                None
            }
        }
    }

    pub fn required_id_or_name(&mut self, name: &str) -> String {
        let value = self.id_or_name(name);
        self.required(name, value).unwrap_or_default()
    }

    fn array(&mut self, name: &str) -> Vec<Value> {
        match self.get(name) {
            None => Vec::new(),
            Some(Value::Array(items)) => items.clone(),
            Some(_) => {
                self.wrong(name, "must be an array");
                Vec::new()
            }
        }
    }

    pub fn ids(&mut self, name: &str) -> Vec<Id> {
        let items = self.array(name);
        let ids: Vec<Id> = items.iter().filter_map(Value::as_i64).collect();
        if ids.len() != items.len() {
            self.wrong(name, "must be an array of integer IDs");
        }
        ids
    }

    pub fn ids_or_names(&mut self, name: &str) -> Vec<String> {
        let items = self.array(name);
        let refs: Vec<String> = items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) if n.as_i64().is_some() => Some(n.to_string()),
                _ => None,
            })
            .collect();
        if refs.len() != items.len() {
            self.wrong(name, "must be an array of IDs or names");
        }
        refs
    }

    pub fn strs(&mut self, name: &str) -> Vec<String> {
        let items = self.array(name);
        let strings: Vec<String> = items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        if strings.len() != items.len() {
            self.wrong(name, "must be an array of strings");
        }
        strings
    }

    pub fn labels(&mut self, name: &str) -> Option<Labels> {
        match self.get(name)? {
            Value::Object(map) => {
                let labels: Labels = map
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect();
                if labels.len() != map.len() {
                    self.wrong(name, "label values must be strings");
                }
                Some(labels)
            }
            _ => {
                self.wrong(name, "must be an object of string labels");
                None
            }
        }
    }

    /// A nested object, read with its own `Body`; give it back to
    /// [`Body::absorb`] so its errors are reported.
    pub fn nested(&mut self, name: &str) -> Option<Body> {
        match self.get(name)? {
            Value::Object(map) => Some(Self::object(map.clone(), self.path(&format!("{name}.")))),
            _ => {
                self.wrong(name, "must be an object");
                None
            }
        }
    }

    /// The objects of an array field, each as its own `Body`.
    pub fn nested_list(&mut self, name: &str) -> Vec<Body> {
        let items = self.array(name);
        let mut bodies = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            match item {
                Value::Object(map) => {
                    bodies.push(Self::object(map, self.path(&format!("{name}[{i}]."))))
                }
                _ => self.wrong(name, "must be an array of objects"),
            }
        }
        bodies
    }

    pub fn absorb(&mut self, child: Body) {
        for field in child.errors.into_fields() {
            for message in field.messages {
                self.errors.push(field.name.clone(), message);
            }
        }
    }

    /// Fails with every field error seen so far.
    pub fn finish(&mut self) -> Result<(), ApiError> {
        std::mem::take(&mut self.errors).into_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_json_is_a_json_error() {
        for bad in [&b"{"[..], b"[1]", b"nul"] {
            let err = Body::parse(bad).err().map(|e| e.code().to_string());
            assert_eq!(err.as_deref(), Some("json_error"));
        }
        assert!(Body::parse(b"").is_ok());
    }

    #[test]
    fn reports_every_bad_field() {
        let mut body = Body::parse(
            br#"{"name": 5, "labels": {"a": 1}, "public_net": {"enable_ipv4": "no"}, "networks": [1, "x"]}"#,
        )
        .unwrap();
        body.required_str("name");
        body.required_id_or_name("image");
        body.labels("labels");
        body.ids("networks");
        if let Some(mut public_net) = body.nested("public_net") {
            public_net.bool("enable_ipv4");
            body.absorb(public_net);
        }
        let err = body.finish().unwrap_err();
        let fields: Vec<String> = err.envelope()["error"]["details"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            fields,
            vec![
                "name",
                "image",
                "labels",
                "networks",
                "public_net.enable_ipv4"
            ]
        );
    }

    #[test]
    fn null_is_absent_and_ids_may_be_names() {
        let mut body =
            Body::parse(br#"{"placement_group": null, "image": 42, "ssh_keys": [1, "mine"]}"#)
                .unwrap();
        assert_eq!(body.id("placement_group"), None);
        assert_eq!(body.id_or_name("image").as_deref(), Some("42"));
        assert_eq!(body.ids_or_names("ssh_keys"), vec!["1", "mine"]);
        assert!(body.finish().is_ok());
    }
}
