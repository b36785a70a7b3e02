use serde_json::{Value, json};

use super::*;

fn round_trip(value: &Value) -> Value {
    let text = to_string(std::slice::from_ref(value));
    let mut documents = parse_documents(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(documents.len(), 1, "{text}");
    documents.remove(0)
}

#[test]
fn layout_matches_talos_style() {
    let document = json!({
        "version": "v1alpha1",
        "machine": {
            "certSANs": [],
            "network": {},
            "kubelet": {"extraArgs": {"cloud-provider": "external"}},
        },
        "cluster": {
            "network": {"podSubnets": ["10.0.224.0/19"]},
            "admissionControl": [{"name": "PodSecurity", "configuration": {"kind": "X"}}],
        },
    });
    let expected = "\
version: v1alpha1
machine:
    certSANs: []
    network: {}
    kubelet:
        extraArgs:
            cloud-provider: external
cluster:
    network:
        podSubnets:
            - 10.0.224.0/19
    admissionControl:
        - name: PodSecurity
          configuration:
              kind: X
";
    assert_eq!(to_string(&[document]), expected);
}

#[test]
fn documents_are_separated() {
    let text = to_string(&[json!({"a": 1}), json!({"kind": "HostnameConfig"})]);
    assert_eq!(text, "a: 1\n---\nkind: HostnameConfig\n");
    assert_eq!(parse_documents(&text).unwrap().len(), 2);
}

#[test]
fn strings_that_look_like_other_types_are_quoted() {
    for text in [
        "",
        "yes",
        "No",
        "ON",
        "off",
        "y",
        "null",
        "~",
        "true",
        "1",
        "24",
        "1.5",
        "0x1F",
        "0o17",
        "017",
        "1e3",
        "1:20",
        "2024-01-01",
        "-1",
        ".inf",
        "- item",
        "key: value",
        "a #b",
        "#c",
        "trailing:",
        " lead",
        "tab\there",
        "quote\"d",
        "back\\slash",
        "\u{85}nel",
        "\u{2028}",
        "*alias",
        "&anchor",
        "!tag",
        "%dir",
        "@at",
        "`tick",
        "{x}",
        "[y]",
        "'single'",
        "?q",
    ] {
        let rendered = to_string(&[json!({ "k": text })]);
        assert!(
            rendered.starts_with("k: \""),
            "{text:?} must be quoted, got {rendered:?}"
        );
        // YAML allows no raw control characters but line breaks.
        assert!(
            !rendered.chars().any(|c| c.is_control() && c != '\n'),
            "{rendered:?}"
        );
        assert_eq!(round_trip(&json!({ "k": text })), json!({ "k": text }));
    }
}

#[test]
fn ordinary_strings_stay_plain() {
    for text in [
        "v1alpha1",
        "10.0.0.1",
        "10.0.128.0/24",
        "https://10.0.128.17:6443",
        "/dev/sda",
        "ghcr.io/siderolabs/kubelet:v1.35.2",
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
        "0raF93qnkMvF-FZNuvyGozXNdLiT2FOWSlyBaW4PR-w=",
        "node.kubernetes.io/exclude-from-external-load-balancers",
        "platform:NoSchedule",
        "1.35.2",
    ] {
        assert_eq!(
            to_string(&[json!({ "k": text })]),
            format!("k: {text}\n"),
            "{text:?} should be plain"
        );
        assert_eq!(round_trip(&json!({ "k": text })), json!({ "k": text }));
    }
}

#[test]
fn multi_line_strings_use_literal_blocks_and_survive() {
    for text in [
        "a\nb\n",
        "a\nb",
        "a\n\n\n",
        "apiVersion: v1\nkind: X\n  indented\n\nlast\n",
    ] {
        let rendered = to_string(&[json!({ "m": [text] })]);
        assert!(rendered.contains('|'), "{rendered}");
        assert_eq!(round_trip(&json!({ "m": [text] })), json!({ "m": [text] }));
    }
    // Blocks cannot express a leading space or a tab: quoted instead.
    for text in [" a\nb", "a\n\tb", "\nb"] {
        let rendered = to_string(&[json!({ "m": text })]);
        assert!(rendered.starts_with("m: \""), "{rendered}");
        assert_eq!(round_trip(&json!({ "m": text })), json!({ "m": text }));
    }
}

#[test]
fn nested_collections_round_trip() {
    let value = json!({
        "list": [[1, [2, []]], {}, null, false, -7, 2.5, {"a": {"b": ["c", {"d": "e"}]}}],
        "1": "numeric key",
        "$patch": "delete",
    });
    assert_eq!(round_trip(&value), value);
}

#[test]
fn syntax_errors_name_the_position_not_the_text() {
    let error = parse_documents("a: 1\nsecret: [unterminated\n").unwrap_err();
    match &error {
        YamlError::Syntax { line, .. } => assert_eq!(*line, 3),
        other => panic!("unexpected {other:?}"),
    }
    assert!(!error.to_string().contains("unterminated"), "{error}");
}

#[test]
fn duplicate_keys_are_rejected() {
    assert!(matches!(
        parse_documents("a: 1\na: 2\n"),
        Err(YamlError::Syntax { line: 2, .. })
    ));
}

#[test]
fn custom_tags_and_complex_keys_are_rejected_with_a_path() {
    let error = parse_documents("machine:\n  x: !custom {a: 1}\n").unwrap_err();
    assert_eq!(
        error,
        YamlError::Unsupported {
            path: "machine.x".into(),
            reason: "custom tags are not supported"
        }
    );
    assert!(matches!(
        parse_documents("? [a]\n: b\n"),
        Err(YamlError::Unsupported { .. })
    ));
}

#[test]
fn anchors_resolve_and_alias_bombs_fail() {
    assert_eq!(
        parse_documents("a: &x {b: 1}\nc: *x\n").unwrap(),
        vec![json!({"a": {"b": 1}, "c": {"b": 1}})]
    );
    let mut bomb = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let previous = format!("*l{}", level - 1);
        let items = [previous.as_str(); 10].join(", ");
        bomb.push_str(&format!("l{level}: &l{level} [{items}]\n"));
    }
    assert!(parse_documents(&bomb).is_err());
}

#[test]
fn empty_text_has_no_documents_and_null_documents_are_kept() {
    assert!(parse_documents("").unwrap().is_empty());
    assert!(parse_documents("# comment only\n").unwrap().is_empty());
    assert_eq!(
        parse_documents("---\n---\na: 1\n").unwrap(),
        vec![Value::Null, json!({"a": 1})]
    );
}
