//! Diagnostics: what went wrong (or looks risky), where in the configuration,
//! and how to fix it. Terraform shows the attribute path next to the message.

use std::fmt;

/// One step into a configuration value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    /// An attribute of an object, e.g. `control_plane`.
    Attribute(String),
    /// An element of a map, e.g. `worker_pools["platform"]`.
    Key(String),
    /// An element of a list, e.g. `config_patches[2]`.
    Index(i64),
}

/// A path to an attribute, e.g. `worker_pools["platform"].cidr`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AttrPath(pub Vec<PathStep>);

impl AttrPath {
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// A path to a top-level attribute.
    pub fn attr(name: impl Into<String>) -> Self {
        Self(vec![PathStep::Attribute(name.into())])
    }

    /// This path, one attribute deeper.
    pub fn attr_of(&self, name: impl Into<String>) -> Self {
        self.with(PathStep::Attribute(name.into()))
    }

    /// This path, into the map element `key`.
    pub fn key(&self, key: impl Into<String>) -> Self {
        self.with(PathStep::Key(key.into()))
    }

    /// This path, into the list element `index`.
    pub fn index(&self, index: i64) -> Self {
        self.with(PathStep::Index(index))
    }

    fn with(&self, step: PathStep) -> Self {
        let mut steps = self.0.clone();
        steps.push(step);
        Self(steps)
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for AttrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                PathStep::Attribute(name) if i == 0 => write!(f, "{name}")?,
                PathStep::Attribute(name) => write!(f, ".{name}")?,
                PathStep::Key(key) => write!(f, "[{key:?}]")?,
                PathStep::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// One line: what is wrong.
    pub summary: String,
    /// The numbers involved, why it matters, and how to fix it.
    pub detail: String,
    /// The attribute the diagnostic is about, if any.
    pub path: Option<AttrPath>,
}

impl Diagnostic {
    pub fn error(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            summary: summary.into(),
            detail: detail.into(),
            path: None,
        }
    }

    pub fn warning(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(summary, detail)
        }
    }

    /// The same diagnostic as a warning (what the apply refuses, said at
    /// plan time).
    pub fn into_warning(self) -> Self {
        Self {
            severity: Severity::Warning,
            ..self
        }
    }

    /// Points the diagnostic at an attribute.
    pub fn at(mut self, path: AttrPath) -> Self {
        self.path = Some(path);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{level}: {}", self.summary)?;
        if let Some(path) = &self.path {
            write!(f, " (at {path})")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// The diagnostics of one request, in the order they were found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    pub fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.0.extend(other);
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(diagnostic: Diagnostic) -> Self {
        Self(vec![diagnostic])
    }
}

impl FromIterator<Diagnostic> for Diagnostics {
    fn from_iter<I: IntoIterator<Item = Diagnostic>>(iter: I) -> Self {
        let mut diagnostics = Diagnostics::new();
        diagnostics.extend(iter);
        diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_terraform_addresses() {
        let path = AttrPath::attr("worker_pools")
            .key("platform")
            .attr_of("cidr");
        assert_eq!(path.to_string(), r#"worker_pools["platform"].cidr"#);
        assert_eq!(AttrPath::attr("patches").index(2).to_string(), "patches[2]");
    }
}
