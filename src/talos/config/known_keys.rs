//! The keys each Talos release's strict decoder accepts (`keys/`, listed
//! from Talos' Go types by `scripts/talos-keys.go`): a config with any
//! other key is refused by the node (with user data, Talos does not even
//! start). Kinds without a list are not checked key by key, and a key
//! listed without children takes any value.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::talos::release::TalosVersion;

const V1_11: &str = include_str!("keys/v1.11.txt");
const V1_12: &str = include_str!("keys/v1.12.txt");
const V1_13: &str = include_str!("keys/v1.13.txt");
const V1_14: &str = include_str!("keys/v1.14.txt");

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

    /// The path of the first key this shape does not know, under `at`.
    fn first_unknown(&self, value: &Value, at: &str) -> Option<String> {
        if self.open {
            return None;
        }
        match value {
            Value::Object(map) if !self.keys.is_empty() => map.iter().find_map(|(key, inner)| {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match self.keys.get(key) {
                    None => Some(path),
                    Some(shape) => shape.first_unknown(inner, &path),
                }
            }),
            Value::Array(items) => {
                let item = self.item.as_ref()?;
                items
                    .iter()
                    .enumerate()
                    .find_map(|(i, v)| item.first_unknown(v, &format!("{at}[{i}]")))
            }
            _ => None,
        }
    }
}

type Release = BTreeMap<String, Shape>;

fn release(text: &str) -> Release {
    let mut kinds = Release::new();
    let mut kind = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            kind = name.to_string();
            continue;
        }
        let shape = kinds.entry(kind.clone()).or_default();
        match line.strip_suffix(" *") {
            Some(path) => shape.at(path).open = true,
            None => {
                shape.at(line);
            }
        }
    }
    kinds
}

fn for_release(talos: &TalosVersion) -> &'static Release {
    static RELEASES: OnceLock<[Release; 4]> = OnceLock::new();
    let all = RELEASES.get_or_init(|| {
        [
            release(V1_11),
            release(V1_12),
            release(V1_13),
            release(V1_14),
        ]
    });
    if talos.line() >= (1, 14) {
        &all[3]
    } else if talos.line() >= (1, 13) {
        &all[2]
    } else if talos.line() >= (1, 12) {
        &all[1]
    } else {
        &all[0]
    }
}

/// The first key of `document` that Talos `talos` does not know, as a
/// path (`machine.kubelet.nodeIp`), if any.
pub(crate) fn first_unknown(document: &Value, talos: &TalosVersion) -> Option<String> {
    let kind = super::documents::kind_of(document);
    for_release(talos).get(kind)?.first_unknown(document, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(text: &str) -> TalosVersion {
        TalosVersion::parse(text).unwrap()
    }

    #[test]
    fn finds_misspelled_keys_and_takes_maps_as_they_are() {
        let doc = json!({"version": "v1alpha1", "machine": {"kubelet": {
            "extraArgs": {"anything": "goes"}, "nodeIp": {"validSubnets": []}}}});
        assert_eq!(
            first_unknown(&doc, &v("v1.12.6")).as_deref(),
            Some("machine.kubelet.nodeIp")
        );
        let link = json!({"apiVersion": "v1alpha1", "kind": "LinkConfig", "name": "eth0",
            "routes": [{"gateway": "10.0.0.1"}, {"gatway": "x"}]});
        assert_eq!(
            first_unknown(&link, &v("v1.13.9")).as_deref(),
            Some("routes[1].gatway")
        );
        let ok = json!({"machine": {"ca": {"crt": "x", "key": ""}}});
        assert_eq!(first_unknown(&ok, &v("v1.11.3")), None);
    }

    /// Keys users patch in every day are known in every release.
    #[test]
    fn knows_what_users_patch_in() {
        let doc = json!({
            "machine": {
                "certSANs": ["k8s.example.com"],
                "kubelet": {"extraArgs": {"max-pods": "150"}},
                "network": {"interfaces": [{"interface": "eth0", "vlans": [{"vlanId": 10}],
                    "routes": [{"network": "10.9.0.0/16", "gateway": "10.0.0.1"}]}]},
            },
            "cluster": {"inlineManifests": [{"name": "cilium", "contents": "---"}]},
        });
        for release in ["v1.11.3", "v1.12.6", "v1.13.9"] {
            let mut doc = doc.clone();
            if release != "v1.11.3" {
                doc["machine"].as_object_mut().unwrap().remove("network");
            }
            assert_eq!(first_unknown(&doc, &v(release)), None, "{release}");
        }
    }

    #[test]
    fn follows_the_release() {
        let doc = json!({"machine": {"install": {"grubUseUKICmdline": true}}});
        assert!(first_unknown(&doc, &v("v1.11.3")).is_some());
        assert_eq!(first_unknown(&doc, &v("v1.12.6")), None);
    }
}
