//! Labels and the label-selector grammar of `?label_selector=`:
//! `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`, and a
//! comma between requirements meaning AND (commas inside a set belong to it).
//! `!=` and `notin` also match resources without the key, as in Kubernetes.

use std::collections::{BTreeMap, BTreeSet};

pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector at position {position}: {reason}")]
pub struct SelectorError {
    pub position: usize,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
}

impl Requirement {
    fn matches(&self, labels: &Labels) -> bool {
        match self {
            Self::Equals(k, v) => labels.get(k) == Some(v),
            Self::NotEquals(k, v) => labels.get(k) != Some(v),
            Self::Exists(k) => labels.contains_key(k),
            Self::NotExists(k) => !labels.contains_key(k),
            Self::In(k, set) => labels.get(k).is_some_and(|v| set.contains(v)),
            Self::NotIn(k, set) => labels.get(k).is_none_or(|v| !set.contains(v)),
        }
    }
}

/// A parsed selector; all requirements must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector(pub Vec<Requirement>);

impl Selector {
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        Parser::new(text).selector()
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')
}

fn is_value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn new(text: &str) -> Self {
        Self {
            chars: text.chars().collect(),
            pos: 0,
        }
    }

    fn fail<T>(&self, reason: impl Into<String>) -> Result<T, SelectorError> {
        Err(SelectorError {
            position: self.pos,
            reason: reason.into(),
        })
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
        self.pos > start
    }

    fn eat(&mut self, token: &str) -> bool {
        let n = token.chars().count();
        let matches = self.chars.len() >= self.pos + n
            && self.chars[self.pos..self.pos + n]
                .iter()
                .copied()
                .eq(token.chars());
        if matches {
            self.pos += n;
        }
        matches
    }

    fn word(&mut self, allowed: fn(char) -> bool) -> String {
        let start = self.pos;
        while self.peek().is_some_and(allowed) {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        let key = self.word(is_key_char);
        if key.is_empty() {
            return self.fail("expected a label key");
        }
        if let Err(reason) = validate_key(&key) {
            return self.fail(reason);
        }
        Ok(key)
    }

    fn value(&mut self) -> Result<String, SelectorError> {
        let value = self.word(is_value_char);
        if let Err(reason) = validate_value(&value) {
            return self.fail(reason);
        }
        Ok(value)
    }

    fn selector(mut self) -> Result<Selector, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            self.skip_spaces();
            if self.peek().is_none() {
                if requirements.is_empty() {
                    // An empty selector selects everything.
                    return Ok(Selector(requirements));
                }
                return self.fail("expected a requirement after ','");
            }
            requirements.push(self.requirement()?);
            self.skip_spaces();
            match self.peek() {
                None => return Ok(Selector(requirements)),
                Some(',') => self.pos += 1,
                Some(c) => return self.fail(format!("unexpected '{c}'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.eat("!") {
            self.skip_spaces();
            return Ok(Requirement::NotExists(self.key()?));
        }
        let key = self.key()?;
        let spaced = self.skip_spaces();
        if self.eat("==") || self.eat("=") {
            self.skip_spaces();
            return Ok(Requirement::Equals(key, self.value()?));
        }
        if self.eat("!=") {
            self.skip_spaces();
            return Ok(Requirement::NotEquals(key, self.value()?));
        }
        if spaced && self.eat("notin") {
            return Ok(Requirement::NotIn(key, self.set()?));
        }
        if spaced && self.eat("in") {
            return Ok(Requirement::In(key, self.set()?));
        }
        Ok(Requirement::Exists(key))
    }

    fn set(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        self.skip_spaces();
        if !self.eat("(") {
            return self.fail("expected '(' to open a set of values");
        }
        let mut values = BTreeSet::new();
        loop {
            self.skip_spaces();
            values.insert(self.value()?);
            self.skip_spaces();
            if self.eat(")") {
                return Ok(values);
            }
            if !self.eat(",") {
                return self.fail("expected ',' or ')' in a set of values");
            }
        }
    }
}

/// `[prefix/]name`: the name is 1–63 characters of `[A-Za-z0-9._-]`
/// starting and ending alphanumeric; the prefix a DNS subdomain.
pub fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let valid = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part.len() <= 63
                    && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !valid {
            return Err(format!(
                "label key prefix '{prefix}' is not a DNS subdomain"
            ));
        }
    }
    if name.is_empty() {
        return Err(format!("label key '{key}' has an empty name"));
    }
    validate_value(name).map_err(|_| format!("label key '{key}' is invalid"))
}

/// Empty, or 1–63 characters of `[A-Za-z0-9._-]` starting and ending alphanumeric.
pub fn validate_value(value: &str) -> Result<(), String> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value.chars().all(is_value_char)
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(format!("label value '{value}' is invalid"))
    }
}

pub fn validate_labels(labels: &Labels) -> Result<(), String> {
    for (key, value) in labels {
        validate_key(key)?;
        validate_value(value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn set(values: &[&str]) -> BTreeSet<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn parses_every_operator() {
        let s = Selector::parse("a=1, b==2,c!=3,d,!e, f in (x, y),g notin (z),hct.dev/role=cp")
            .unwrap();
        assert_eq!(
            s.0,
            vec![
                Requirement::Equals("a".into(), "1".into()),
                Requirement::Equals("b".into(), "2".into()),
                Requirement::NotEquals("c".into(), "3".into()),
                Requirement::Exists("d".into()),
                Requirement::NotExists("e".into()),
                Requirement::In("f".into(), set(&["x", "y"])),
                Requirement::NotIn("g".into(), set(&["z"])),
                Requirement::Equals("hct.dev/role".into(), "cp".into()),
            ]
        );
    }

    #[test]
    fn matching_follows_kubernetes_semantics() {
        let l = labels(&[("os", "talos"), ("arch", "amd64"), ("empty", "")]);
        let yes = [
            "os=talos",
            "os==talos",
            "os!=debian",
            "missing!=x",
            "os",
            "!missing",
            "arch in (arm64,amd64)",
            "arch notin (arm64)",
            "missing notin (a)",
            "os=talos,arch=amd64",
            "empty=",
            "",
        ];
        for text in yes {
            assert!(Selector::parse(text).unwrap().matches(&l), "{text}");
        }
        let no = [
            "os=debian",
            "os!=talos",
            "missing",
            "!os",
            "arch in (arm64)",
            "missing in (a)",
            "arch notin (amd64, arm64)",
            "os=talos,arch=arm64",
        ];
        for text in no {
            assert!(!Selector::parse(text).unwrap().matches(&l), "{text}");
        }
    }

    #[test]
    fn in_needs_a_space_before_it() {
        // `keyin` is a key named "keyin", not `key in`.
        assert_eq!(
            Selector::parse("keyin").unwrap().0,
            vec![Requirement::Exists("keyin".into())]
        );
    }

    #[test]
    fn rejects_malformed_selectors() {
        for text in [
            "a=1,", ",a", "a in x", "a in (x", "=1", "a=1 b=2", "-bad=1", "a=bad-", "a b", "!",
        ] {
            assert!(Selector::parse(text).is_err(), "{text} should not parse");
        }
    }

    #[test]
    fn validates_keys_and_values() {
        assert!(validate_key("hct.dev/cluster").is_ok());
        assert!(validate_key("cluster").is_ok());
        assert!(validate_key("/x").is_err());
        assert!(validate_key("bad_prefix_/x").is_err());
        assert!(validate_key(&"k".repeat(64)).is_err());
        assert!(validate_value("").is_ok());
        assert!(validate_value("v1.12.6").is_ok());
        assert!(validate_value("a b").is_err());
        assert!(validate_value(&"v".repeat(64)).is_err());
    }
}
