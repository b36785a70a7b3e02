//! Label selectors, the filter language of Hetzner list calls
//! (`cluster=noreturn,role in (cp,worker),!temporary`).

use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<String>);

impl LabelSelector {
    pub fn new() -> Self {
        Self::default()
    }

    /// `key=value`
    pub fn eq(self, key: &str, value: &str) -> Self {
        self.with(format!("{key}={value}"))
    }

    /// `key!=value`
    pub fn ne(self, key: &str, value: &str) -> Self {
        self.with(format!("{key}!={value}"))
    }

    /// `key` (the label is present)
    pub fn has(self, key: &str) -> Self {
        self.with(key.to_string())
    }

    /// `!key` (the label is absent)
    pub fn lacks(self, key: &str) -> Self {
        self.with(format!("!{key}"))
    }

    /// `key in (a,b)`
    pub fn one_of(self, key: &str, values: &[&str]) -> Self {
        self.with(format!("{key} in ({})", values.join(",")))
    }

    /// `key notin (a,b)`
    pub fn none_of(self, key: &str, values: &[&str]) -> Self {
        self.with(format!("{key} notin ({})", values.join(",")))
    }

    fn with(mut self, term: String) -> Self {
        self.0.push(term);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_every_operator() {
        let selector = LabelSelector::new()
            .eq("cluster", "noreturn")
            .ne("pool", "general")
            .has("role")
            .lacks("temporary")
            .one_of("arch", &["amd64", "arm64"])
            .none_of("env", &["dev"]);
        assert_eq!(
            selector.to_string(),
            "cluster=noreturn,pool!=general,role,!temporary,arch in (amd64,arm64),env notin (dev)"
        );
    }
}
