//! Talos' strict decoding: a document may hold only the keys its release's
//! types know. Talos decodes each document, encodes it again and reports
//! what did not survive the round trip as "unknown keys found during
//! decoding", followed by those keys (with their values) as YAML indented
//! by four spaces; documents of a kind the release does not register are
//! "not registered". From v1.12 on the message names the document
//! (`<apiVersion>/<kind>/<name>`, the v1alpha1 document is `/v1alpha1/`)
//! and the line it starts on; v1.11 gives the bare reason.
//!
//! The keys per release are hct's lists (`src/talos/config/keys/`, listed
//! from Talos' Go types by `scripts/talos-keys.go`): one copy in the
//! repository, read by hct's plan-time checks and by this emulation.
//! Kinds without a list there (volumes, extensions, …) are not checked
//! key by key, and a key listed without children takes any value.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_yaml_ng::{Mapping, Value};

use crate::talos::version::TalosVersion;

const V1_11: &str = include_str!("../../../../src/talos/config/keys/v1.11.txt");
const V1_12: &str = include_str!("../../../../src/talos/config/keys/v1.12.txt");
const V1_13: &str = include_str!("../../../../src/talos/config/keys/v1.13.txt");
const V1_14: &str = include_str!("../../../../src/talos/config/keys/v1.14.txt");

/// What a key may hold: any value (`open`), or only the listed keys (of a
/// mapping, or of each item of a list).
#[derive(Debug, Default)]
struct Shape {
    open: bool,
    keys: BTreeMap<String, Shape>,
    item: Option<Box<Shape>>,
}

impl Shape {
    fn at(&mut self, path: &str) -> &mut Shape {
        let mut shape = self;
        for segment in path.split('.') {
            let (name, lists) = match segment.find("[]") {
                Some(i) => (&segment[..i], segment[i..].matches("[]").count()),
                None => (segment, 0),
            };
            shape = shape.keys.entry(name.to_string()).or_default();
            for _ in 0..lists {
                shape = shape.item.get_or_insert_with(Box::default);
            }
        }
        shape
    }

    /// Whether anything below is checked at all.
    fn checks(&self) -> bool {
        !self.open && (!self.keys.is_empty() || self.item.as_ref().is_some_and(|i| i.checks()))
    }

    /// The parts of `value` this shape does not know, or None.
    fn unknown(&self, value: &Value) -> Option<Value> {
        if !self.checks() {
            return None;
        }
        match value {
            Value::Mapping(map) if !self.keys.is_empty() => {
                let mut out = Mapping::new();
                for (key, inner) in map {
                    let name = key.as_str().unwrap_or_default();
                    match self.keys.get(name) {
                        None => {
                            out.insert(key.clone(), inner.clone());
                        }
                        Some(shape) => {
                            if let Some(unknown) = shape.unknown(inner) {
                                out.insert(key.clone(), unknown);
                            }
                        }
                    }
                }
                (!out.is_empty()).then_some(Value::Mapping(out))
            }
            Value::Sequence(items) => {
                let item = self.item.as_ref()?;
                let unknown: Vec<Value> = items.iter().filter_map(|v| item.unknown(v)).collect();
                (!unknown.is_empty()).then_some(Value::Sequence(unknown))
            }
            _ => None,
        }
    }
}

/// The kinds (`v1alpha1` for the v1alpha1 document) a release lists keys of.
type Release = BTreeMap<String, Shape>;

fn release(text: &str) -> Release {
    let mut kinds = Release::new();
    let mut current: Option<&mut Shape> = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(kind) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(kinds.entry(kind.to_string()).or_default());
            continue;
        }
        let shape = current.as_deref_mut().expect("a key before any [kind]");
        match line.strip_suffix(" *") {
            Some(path) => shape.at(path).open = true,
            None => {
                shape.at(line);
            }
        }
    }
    kinds
}

fn releases() -> &'static [(u64, Release); 4] {
    static RELEASES: OnceLock<[(u64, Release); 4]> = OnceLock::new();
    RELEASES.get_or_init(|| {
        [
            (11, release(V1_11)),
            (12, release(V1_12)),
            (13, release(V1_13)),
            (14, release(V1_14)),
        ]
    })
}

/// The key lists for `talos` (the newest for an unknown or newer release).
fn for_release(talos: Option<&TalosVersion>) -> &'static Release {
    let all = releases();
    let minor = talos.map_or(u64::MAX, |v| {
        if v.at_least(1, 14) {
            14
        } else if v.at_least(1, 13) {
            13
        } else if v.at_least(1, 12) {
            12
        } else {
            11
        }
    });
    &all.iter().find(|(m, _)| *m >= minor).unwrap_or(&all[3]).1
}

/// YAML as Talos prints the unknown keys: block style, four spaces a level.
fn render(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Mapping(map) => {
            for (key, inner) in map {
                out.push_str(&pad);
                out.push_str(&scalar(key));
                out.push(':');
                nested(inner, indent, out);
            }
        }
        Value::Sequence(items) => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                let mut text = String::new();
                render(item, indent + 2, &mut text);
                out.push_str(text.trim_start());
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn nested(value: &Value, indent: usize, out: &mut String) {
    match value {
        Value::Mapping(m) if m.is_empty() => out.push_str(" {}\n"),
        Value::Sequence(s) if s.is_empty() => out.push_str(" []\n"),
        Value::Mapping(_) | Value::Sequence(_) => {
            out.push('\n');
            render(value, indent + 4, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        // Quoted (as Go's encoder does, in double quotes) when the bare text
        // would read back as something else.
        Value::String(s) => match serde_yaml_ng::from_str::<Value>(s) {
            Ok(Value::String(back)) if back == *s && !s.is_empty() => s.clone(),
            _ => format!("{s:?}"),
        },
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    }
}

/// Where the document starts, as Talos names it in its errors.
pub(super) struct Origin<'a> {
    pub kind: &'a str,
    pub api_version: &'a str,
    pub name: &'a str,
    pub line: usize,
}

impl Origin<'_> {
    /// Talos' prefix for an error in this document (none on v1.11).
    pub(super) fn wrap(&self, talos: Option<&TalosVersion>, reason: String) -> String {
        if talos.is_some_and(|v| !v.at_least(1, 12)) {
            return reason;
        }
        let kind = if self.kind.is_empty() {
            "v1alpha1"
        } else {
            self.kind
        };
        format!(
            "error decoding document {}/{kind}/{} (line {}): {reason}",
            self.api_version, self.name, self.line
        )
    }
}

/// Talos' complaint about unknown keys in a document of `kind`, if any.
pub(super) fn unknown_keys(
    kind: &str,
    value: &Value,
    talos: Option<&TalosVersion>,
) -> Option<String> {
    let shape = for_release(talos).get(kind)?;
    let unknown = shape.unknown(value)?;
    let mut text = String::from("unknown keys found during decoding:\n");
    render(&unknown, 0, &mut text);
    Some(text)
}

/// The line each YAML document of `text` starts on (its first line that is
/// neither blank, a comment nor a `---` separator), in document order.
pub(super) fn document_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut waiting = true;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("---") && line.starts_with("---") {
            waiting = true;
            continue;
        }
        if waiting && !trimmed.is_empty() && !trimmed.starts_with('#') {
            lines.push(i + 1);
            waiting = false;
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> TalosVersion {
        text.parse().unwrap()
    }

    fn yaml(text: &str) -> Value {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn reports_unknown_keys_as_talos_prints_them() {
        let doc = yaml("machine:\n  kubelet:\n    image: x\n    extraArgz:\n      foo: bar\n");
        assert_eq!(
            unknown_keys("v1alpha1", &doc, Some(&v("v1.12.6"))).unwrap(),
            "unknown keys found during decoding:\nmachine:\n    kubelet:\n        extraArgz:\n            foo: bar\n"
        );
        let link = yaml("name: eth0\nfoo: 1\nroutes:\n  - gateway: 10.0.0.1\n    gatway: x\n");
        assert_eq!(
            unknown_keys("LinkConfig", &link, Some(&v("v1.12.6"))).unwrap(),
            "unknown keys found during decoding:\nfoo: 1\nroutes:\n    - gatway: x\n"
        );
    }

    #[test]
    fn maps_and_values_with_their_own_decoder_take_anything() {
        let doc = yaml(
            "machine:\n  kubelet:\n    extraArgs:\n      anything: here\n  ca:\n    crt: a\n    key: b\n\
             cluster:\n  apiServer:\n    auditPolicy:\n      rules: [{level: Metadata}]\n",
        );
        assert_eq!(unknown_keys("v1alpha1", &doc, Some(&v("v1.11.3"))), None);
    }

    #[test]
    fn keys_follow_the_release() {
        let doc = yaml("machine:\n  install:\n    grubUseUKICmdline: true\n");
        assert!(unknown_keys("v1alpha1", &doc, Some(&v("v1.11.3"))).is_some());
        assert_eq!(unknown_keys("v1alpha1", &doc, Some(&v("v1.12.6"))), None);
    }

    #[test]
    fn v1_14_nodes_use_the_v1_14_lists() {
        let doc = yaml("clusterName: c\nendpoint: https://x:6443\nclusterNmae: typo\n");
        assert_eq!(
            unknown_keys("KubeClusterConfig", &doc, Some(&v("v1.14.0"))).unwrap(),
            "unknown keys found during decoding:\nclusterNmae: typo\n"
        );
        assert_eq!(
            unknown_keys("KubeClusterConfig", &doc, Some(&v("v1.13.9"))),
            None
        );
        let dhcp = yaml("name: eth0\nignoreRoutes: true\n");
        assert!(unknown_keys("DHCPv4Config", &dhcp, Some(&v("v1.13.9"))).is_some());
        assert_eq!(
            unknown_keys("DHCPv4Config", &dhcp, Some(&v("v1.14.0"))),
            None
        );
        assert_eq!(
            unknown_keys("DHCPv4Config", &dhcp, None),
            None,
            "the newest"
        );
    }

    #[test]
    fn finds_where_documents_start() {
        let text = "# comment\nversion: v1alpha1\n---\napiVersion: v1alpha1\n---\n\nkind: X\n";
        assert_eq!(document_lines(text), vec![2, 4, 7]);
    }
}
