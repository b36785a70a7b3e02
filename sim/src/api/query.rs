//! Query strings, where parameters may repeat (`?id=1&id=2`, `?sort=a&sort=b`).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::errors::ApiError;
use crate::labels::Selector;
use crate::pagination::{PageRequest, SortOrder};

#[derive(Debug, Default, Clone)]
pub struct Query(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::parse(parts.uri.query().unwrap_or("")))
    }
}

impl Query {
    pub fn parse(query: &str) -> Self {
        Self(
            form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.trim_end_matches("[]").to_string(), v.into_owned()))
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a repeatable parameter (comma-separated lists too).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect()
    }

    pub fn page(&self) -> Result<PageRequest, ApiError> {
        PageRequest::parse(self.get("page"), self.get("per_page"))
    }

    pub fn sort(&self, allowed: &[&str]) -> Result<SortOrder, ApiError> {
        SortOrder::parse(&self.all("sort"), allowed)
    }

    pub fn selector(&self) -> Result<Option<Selector>, ApiError> {
        self.get("label_selector")
            .map(|text| {
                Selector::parse(text).map_err(|e| ApiError::field("label_selector", e.to_string()))
            })
            .transpose()
    }

    pub fn ids(&self, name: &str) -> Result<Vec<i64>, ApiError> {
        self.all(name)
            .into_iter()
            .map(|v| {
                v.parse()
                    .map_err(|_| ApiError::field(name, format!("'{v}' is not an ID")))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_and_encoded_parameters() {
        let q = Query::parse(
            "id=1&id=2&id[]=3&label_selector=os%3Dtalos%2Carch+in+(a%2Cb)&sort=name:desc",
        );
        assert_eq!(q.all("id"), vec!["1", "2", "3"]);
        assert_eq!(q.ids("id").unwrap(), vec![1, 2, 3]);
        assert_eq!(q.get("label_selector"), Some("os=talos,arch in (a,b)"));
        assert!(q.selector().unwrap().is_some());
        assert!(Query::parse("id=x").ids("id").is_err());
        assert!(Query::parse("label_selector=a%20in").selector().is_err());
    }
}
