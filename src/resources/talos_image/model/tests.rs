//! Decoding a configuration into an image spec: defaults, labels and
//! description, checks pointing at their attribute, release warnings.

use super::Attributes;
use crate::snapshot::ImageSpec;
use crate::snapshot::spec::DEFAULT_CREATE_TIMEOUT;
use crate::talos::image::{self, DEFAULT_FACTORY_URL};
use crate::tf::{AttrPath, Diagnostics, Value};

/// The image spec of a configuration value.
fn spec_of(value: &Value) -> Result<ImageSpec, Diagnostics> {
    Attributes::decode(value).spec()
}

fn validate(config: &Value) -> Diagnostics {
    Attributes::decode(config).validate()
}

fn warnings(config: &Value) -> Diagnostics {
    Attributes::decode(config).warnings()
}

fn config(pairs: &[(&str, Value)]) -> Value {
    let mut all = vec![
        ("talos_version", Value::from("v1.12.6")),
        ("architecture", Value::from("amd64")),
        ("location", Value::from("nbg1")),
    ];
    for (name, value) in pairs {
        all.retain(|(n, _)| n != name);
        all.push((name, value.clone()));
    }
    Value::object(all)
}

#[test]
fn defaults_labels_and_description() {
    let spec = spec_of(&config(&[(
        "extensions",
        Value::strings(["siderolabs/qemu-guest-agent"]),
    )]))
    .unwrap();
    let id = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";
    assert_eq!(spec.schematic_id, id);
    assert_eq!(spec.server_type, "cx23");
    assert_eq!(spec.factory, DEFAULT_FACTORY_URL);
    assert_eq!(spec.create_timeout, DEFAULT_CREATE_TIMEOUT);
    assert_eq!(
        spec.image_url(),
        format!("https://factory.talos.dev/image/{id}/v1.12.6/hcloud-amd64.raw.xz")
    );
    let labels = spec.labels();
    assert_eq!(labels["schematic"], &id[..32]);
    assert_eq!(labels["os"], "talos");
    assert_eq!(labels["type"], "infra");
    assert_eq!(
        image::schematic_in_description(&spec.description()),
        Some(id)
    );
    let arm = spec_of(&config(&[("architecture", Value::from("arm64"))])).unwrap();
    assert_eq!(arm.server_type, "cax11");
}

#[test]
fn errors_point_at_their_attribute() {
    let cases = [
        (
            "talos_version",
            Value::from("1.12"),
            AttrPath::attr("talos_version"),
        ),
        (
            "architecture",
            Value::from("x86"),
            AttrPath::attr("architecture"),
        ),
        ("location", Value::from(""), AttrPath::attr("location")),
        (
            "server_type",
            Value::from("cax11"),
            AttrPath::attr("server_type"),
        ),
        (
            "image_factory_url",
            Value::from("https://f.example/'; rm -rf /"),
            AttrPath::attr("image_factory_url"),
        ),
        (
            "labels",
            Value::object([("os", Value::from("linux"))]),
            AttrPath::attr("labels").key("os"),
        ),
        (
            "labels",
            Value::object([("team", Value::from("a b"))]),
            AttrPath::attr("labels").key("team"),
        ),
        (
            "extensions",
            Value::strings(["ok", " "]),
            AttrPath::attr("extensions").index(1),
        ),
        (
            "timeouts",
            Value::object([("create", Value::from("soon"))]),
            AttrPath::attr("timeouts").attr_of("create"),
        ),
    ];
    for (attribute, value, path) in cases {
        let diagnostics = validate(&config(&[(attribute, value.clone())]));
        let first = diagnostics
            .iter()
            .next()
            .unwrap_or_else(|| panic!("{attribute} = {value:?} passed"));
        assert_eq!(first.path.as_ref(), Some(&path), "{attribute}");
    }
    assert!(validate(&config(&[("server_type", Value::from("cx33"))])).is_empty());
    assert!(validate(&config(&[("location", Value::Unknown)])).is_empty());
}

#[test]
fn known_problem_releases_warn() {
    let warned = warnings(&config(&[("talos_version", Value::from("v1.11.3"))]));
    assert!(
        warned
            .iter()
            .any(|d| !d.is_error() && d.detail.contains("containerd"))
    );
    assert!(warnings(&config(&[])).is_empty());
}
