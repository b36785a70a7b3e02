//! The resource's plan (defaults, offline values, what replaces the
//! snapshot) and import, without Hetzner.

use super::diagnostics::to_diagnostic;
use super::model::Attributes;
use super::resource::{plan, schema};
use crate::hcloud::models::Image;
use crate::snapshot::find;
use crate::tf::{AttrPath, Diagnostic, Value};

const QEMU: &str = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";
const DEFAULT: &str = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";

/// An imported snapshot's state, as `import` makes it after reading the image.
fn imported(image: &Image) -> Result<Value, Diagnostic> {
    find::identify(image)
        .map(|found| Attributes::imported(&found).encode())
        .map_err(|e| to_diagnostic(&e))
}

fn config(pairs: &[(&str, Value)]) -> Value {
    let mut map: std::collections::BTreeMap<String, Value> = schema()
        .block
        .attributes
        .iter()
        .map(|a| (a.name.clone(), Value::Null))
        .collect();
    map.insert("timeouts".into(), Value::Null);
    map.insert("talos_version".into(), Value::from("v1.12.6"));
    map.insert("architecture".into(), Value::from("amd64"));
    map.insert("location".into(), Value::from("nbg1"));
    for (name, value) in pairs {
        map.insert(name.to_string(), value.clone());
    }
    Value::Map(map)
}

#[test]
fn create_plans_offline_values_and_defaults() {
    let planned = plan(
        &Value::Null,
        &config(&[(
            "extensions",
            Value::strings(["siderolabs/qemu-guest-agent"]),
        )]),
    );
    let p = &planned.planned;
    assert_eq!(p.get("schematic_id"), &Value::from(QEMU));
    assert_eq!(
        p.get("image_url"),
        &Value::from(format!(
            "https://factory.talos.dev/image/{QEMU}/v1.12.6/hcloud-amd64.raw.xz"
        ))
    );
    assert_eq!(
        p.get("installer_image"),
        &Value::from(format!("factory.talos.dev/hcloud-installer/{QEMU}:v1.12.6"))
    );
    assert_eq!(p.get("server_type"), &Value::from("cx23"));
    assert_eq!(p.get("keep_on_destroy"), &Value::from(false));
    assert!(p.get("id").is_unknown());
    assert!(planned.requires_replace.is_empty());

    let arm = plan(
        &Value::Null,
        &config(&[("architecture", Value::from("arm64"))]),
    );
    assert_eq!(arm.planned.get("server_type"), &Value::from("cax11"));
    assert_eq!(arm.planned.get("schematic_id"), &Value::from(DEFAULT));

    let unknown = plan(&Value::Null, &config(&[("extensions", Value::Unknown)]));
    assert!(unknown.planned.get("schematic_id").is_unknown());
    assert!(unknown.planned.get("image_url").is_unknown());
}

#[test]
fn schematic_changes_replace_and_labels_do_not() {
    let mut prior = plan(&Value::Null, &config(&[])).planned;
    if let Value::Map(m) = &mut prior {
        m.insert("id".into(), Value::from("300000009"));
    }
    let same = plan(
        &prior,
        &config(&[("labels", Value::object([("team", Value::from("infra"))]))]),
    );
    assert!(same.requires_replace.is_empty());
    assert_eq!(same.planned.get("id"), &Value::from("300000009"));

    let moved = plan(&prior, &config(&[("location", Value::from("fsn1"))]));
    assert!(moved.requires_replace.is_empty());

    let cases = [
        (
            "extensions",
            Value::strings(["siderolabs/qemu-guest-agent"]),
        ),
        ("extra_kernel_args", Value::strings(["console=ttyS0"])),
        ("talos_version", Value::from("v1.12.7")),
        ("architecture", Value::from("arm64")),
        (
            "image_factory_url",
            Value::from("https://factory.example.com"),
        ),
    ];
    for (attribute, value) in cases {
        let replaced = plan(&prior, &config(&[(attribute, value)]));
        assert!(
            replaced
                .requires_replace
                .contains(&AttrPath::attr(attribute)),
            "{attribute}: {:?}",
            replaced.requires_replace
        );
        assert!(replaced.planned.get("id").is_unknown());
    }
    // An empty list is the same schematic as none.
    let empty = plan(&prior, &config(&[("extensions", Value::List(vec![]))]));
    assert!(
        empty.requires_replace.is_empty(),
        "{:?}",
        empty.requires_replace
    );
}

#[test]
fn imports_from_labels_and_description() {
    let image = Image {
        id: 42,
        kind: "snapshot".into(),
        status: "available".into(),
        description: format!("Talos Linux v1.12.6 (arm64), schematic {QEMU}"),
        labels: [
            ("os", "talos"),
            ("type", "infra"),
            ("version", "v1.12.6"),
            ("arch", "arm64"),
            ("schematic", &QEMU[..32]),
            ("team", "infra"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        ..Image::default()
    };
    let state = imported(&image).unwrap();
    assert_eq!(state.get("schematic_id"), &Value::from(QEMU));
    assert_eq!(state.get("architecture"), &Value::from("arm64"));
    assert_eq!(
        state.get("labels"),
        &Value::object([("team", Value::from("infra"))])
    );
    // The imported state plans without replacement for the same schematic.
    let replan = plan(
        &state,
        &config(&[
            ("architecture", Value::from("arm64")),
            (
                "extensions",
                Value::strings(["siderolabs/qemu-guest-agent"]),
            ),
            ("labels", Value::object([("team", Value::from("infra"))])),
        ]),
    );
    assert!(
        replan.requires_replace.is_empty(),
        "{:?}",
        replan.requires_replace
    );

    let mut debian = image.clone();
    debian.labels.remove("os");
    assert!(imported(&debian).unwrap_err().detail.contains("os=talos"));
}
