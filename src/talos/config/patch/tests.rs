use serde_json::{Value, json};

use super::*;

/// A small v1.12-style config: the v1alpha1 document and two network ones.
fn config() -> Vec<Value> {
    vec![
        json!({
            "version": "v1alpha1",
            "machine": {
                "certSANs": ["a"],
                "kubelet": {"extraArgs": {"cloud-provider": "external"}},
                "install": {"disk": "/dev/sda", "wipe": false},
                "features": {"hostDNS": {"enabled": true}, "kubePrism": {"port": 7445}},
                "network": {"interfaces": [
                    {"interface": "eth0", "dhcp": true, "routes": [{"network": "0.0.0.0/0", "gateway": "10.0.0.1"}]},
                ]},
            },
            "cluster": {
                "secret": "s3cr3t-value",
                "network": {"podSubnets": ["10.0.224.0/19"], "serviceSubnets": ["10.0.192.0/21"]},
                "apiServer": {
                    "admissionControl": [{"name": "PodSecurity", "configuration": {"defaults": {"enforce": "baseline"}}}],
                    "auditPolicy": {"kind": "Policy", "rules": [{"level": "Metadata"}]},
                },
            },
        }),
        json!({"apiVersion": "v1alpha1", "kind": "LinkConfig", "name": "eth0", "routes": [{"gateway": "10.0.0.1"}]}),
        json!({"apiVersion": "v1alpha1", "kind": "DHCPv4Config", "name": "eth0"}),
    ]
}

fn patched(patch: &str) -> Vec<Value> {
    let mut documents = config();
    apply(&mut documents, patch, Contract::V1_12).unwrap_or_else(|e| panic!("{e}"));
    documents
}

fn failure(patch: &str) -> PatchError {
    failure_for(patch, Contract::V1_12)
}

fn failure_for(patch: &str, contract: Contract) -> PatchError {
    let mut documents = config();
    let error = apply(&mut documents, patch, contract).unwrap_err();
    assert_eq!(
        documents,
        config(),
        "a failed patch leaves the config alone"
    );
    error
}

// Strategic merge.

#[test]
fn mappings_merge_and_lists_append() {
    let docs = patched(
        "machine:\n  certSANs: [b]\n  kubelet:\n    extraArgs:\n      max-pods: \"200\"\n  sysctls: {a.b: \"1\"}\n",
    );
    let machine = &docs[0]["machine"];
    assert_eq!(machine["certSANs"], json!(["a", "b"]));
    assert_eq!(
        machine["kubelet"]["extraArgs"],
        json!({"cloud-provider": "external", "max-pods": "200"})
    );
    assert_eq!(machine["sysctls"], json!({"a.b": "1"}));
}

#[test]
fn some_fields_replace_as_in_talos() {
    let docs = patched(
        "cluster:\n  network:\n    podSubnets: [10.1.0.0/16]\n  apiServer:\n    auditPolicy: {kind: Policy, rules: [{level: None}]}\n",
    );
    assert_eq!(
        docs[0]["cluster"]["network"]["podSubnets"],
        json!(["10.1.0.0/16"])
    );
    assert_eq!(
        docs[0]["cluster"]["network"]["serviceSubnets"],
        json!(["10.0.192.0/21"])
    );
    assert_eq!(
        docs[0]["cluster"]["apiServer"]["auditPolicy"],
        json!({"kind": "Policy", "rules": [{"level": "None"}]})
    );
}

#[test]
fn keyed_lists_merge_items_by_their_key() {
    let docs = patched(
        "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        mtu: 1450\n        routes: [{network: 10.9.0.0/16, gateway: 10.0.0.1}]\n      - interface: eth1\n        dhcp: true\n",
    );
    let interfaces = docs[0]["machine"]["network"]["interfaces"]
        .as_array()
        .unwrap();
    assert_eq!(interfaces.len(), 2);
    assert_eq!(interfaces[0]["mtu"], 1450);
    assert_eq!(interfaces[0]["routes"].as_array().unwrap().len(), 2);
    assert_eq!(interfaces[1]["interface"], "eth1");

    // The first key the item sets decides; an empty one counts as unset.
    let mut documents = config();
    documents[0]["machine"]["network"]["interfaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({"deviceSelector": {"busPath": "0*"}, "dhcp": true}));
    apply(
        &mut documents,
        "machine:\n  network:\n    interfaces:\n      - interface: \"\"\n        deviceSelector: {busPath: 0*}\n        mtu: 9000\n",
        Contract::V1_12,
    )
    .unwrap();
    let interfaces = documents[0]["machine"]["network"]["interfaces"]
        .as_array()
        .unwrap();
    assert_eq!(interfaces.len(), 2);
    assert_eq!(interfaces[1]["mtu"], 9000);

    let docs = patched(
        "cluster:\n  apiServer:\n    admissionControl:\n      - name: PodSecurity\n        configuration: {defaults: {enforce: restricted}}\n",
    );
    let plugins = docs[0]["cluster"]["apiServer"]["admissionControl"]
        .as_array()
        .unwrap();
    assert_eq!(plugins.len(), 1);
    assert_eq!(
        plugins[0]["configuration"]["defaults"]["enforce"],
        "restricted"
    );
}

#[test]
fn empty_strings_and_zeros_keep_the_old_value_but_false_applies() {
    let docs = patched(
        "machine:\n  install: {disk: \"\", wipe: true}\n  features: {hostDNS: {enabled: false}, kubePrism: {port: 0}}\n",
    );
    let machine = &docs[0]["machine"];
    assert_eq!(
        machine["install"],
        json!({"disk": "/dev/sda", "wipe": true})
    );
    assert_eq!(machine["features"]["hostDNS"]["enabled"], false);
    assert_eq!(machine["features"]["kubePrism"]["port"], 7445);
}

#[test]
fn documents_merge_by_kind_and_name_or_are_added() {
    let docs = patched(
        "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nmtu: 1450\n---\napiVersion: v1alpha1\nkind: ResolverConfig\nnameservers: [{address: 10.0.0.53}]\n---\napiVersion: v1alpha1\nkind: LinkConfig\nname: eth1\nup: true\n",
    );
    assert_eq!(docs.len(), 5);
    assert_eq!(docs[1]["mtu"], 1450);
    assert_eq!(docs[1]["routes"], json!([{"gateway": "10.0.0.1"}]));
    assert_eq!(docs[3]["kind"], "ResolverConfig");
    assert_eq!(docs[4]["name"], "eth1");
}

#[test]
fn merging_a_list_into_a_mapping_names_the_path() {
    assert_eq!(
        failure("machine:\n  kubelet:\n    extraArgs: [a]\n"),
        PatchError::TypeMismatch {
            path: "machine.kubelet.extraArgs".into(),
            left: "a mapping",
            right: "a list",
        }
    );
}

#[test]
fn replaced_fields_still_need_the_same_type() {
    assert_eq!(
        failure("cluster:\n  network:\n    podSubnets: 10.1.0.0/16\n"),
        PatchError::TypeMismatch {
            path: "cluster.network.podSubnets".into(),
            left: "a list",
            right: "a string",
        }
    );
}

#[test]
fn documents_are_checked_like_talos_loads_them() {
    for (patch, reason) in [
        (
            "kind: LinkConfig\nname: eth1\n",
            "apiVersion and kind must be set together",
        ),
        (
            "apiVersion: v1alpha1\nkind: MadeUpConfig\n",
            "Talos v1.12 has no document kind \"MadeUpConfig\"",
        ),
        (
            "apiVersion: v1alpha2\nkind: LinkConfig\n",
            "apiVersion must be v1alpha1",
        ),
        ("version: v2\nmachine: {}\n", "version must be v1alpha1"),
    ] {
        assert_eq!(
            failure(patch),
            PatchError::Document {
                document: 0,
                reason: reason.into()
            }
        );
    }
    // LinkConfig exists from Talos 1.12 on only.
    assert_eq!(
        failure_for(
            "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth1\n",
            Contract::V1_11
        ),
        PatchError::Document {
            document: 0,
            reason: "Talos v1.11 has no document kind \"LinkConfig\"".into()
        }
    );
}

// $patch: delete

#[test]
fn delete_removes_keys_list_items_and_documents() {
    let docs = patched("machine:\n  features:\n    hostDNS:\n      $patch: delete\n");
    assert_eq!(
        docs[0]["machine"]["features"],
        json!({"kubePrism": {"port": 7445}})
    );

    let docs = patched(
        "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        $patch: delete\n      - interface: eth1\n        dhcp: true\n",
    );
    assert_eq!(
        docs[0]["machine"]["network"]["interfaces"],
        json!([{"interface": "eth1", "dhcp": true}])
    );

    let docs = patched("apiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\n$patch: delete\n");
    assert_eq!(docs.len(), 2);
    assert!(
        docs.iter()
            .all(|d| d.get("kind") != Some(&json!("DHCPv4Config")))
    );
}

#[test]
fn delete_of_something_missing_or_unsupported_fails() {
    assert_eq!(
        failure("machine:\n  nodeTaints:\n    $patch: delete\n"),
        PatchError::Delete {
            path: "machine.nodeTaints".into(),
            reason: "nothing to delete there".into()
        }
    );
    assert_eq!(
        failure(
            "machine:\n  network:\n    interfaces:\n      - interface: eth7\n        $patch: delete\n"
        ),
        PatchError::Delete {
            path: "machine.network.interfaces".into(),
            reason: "no item's interface matches".into(),
        }
    );
    assert!(matches!(
        failure("version: v1alpha1\n$patch: delete\n"),
        PatchError::Document { .. }
    ));
    assert!(matches!(
        failure("apiVersion: v1alpha1\nkind: ResolverConfig\n$patch: delete\n"),
        PatchError::Document { .. }
    ));
    assert_eq!(
        failure(
            "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        routes:\n          - {network: 0.0.0.0/0, $patch: delete}\n"
        ),
        PatchError::Delete {
            path: "machine.network.interfaces[0]".into(),
            reason: "cannot delete inside a list item; delete the whole item".into(),
        }
    );
    assert!(matches!(
        failure("machine:\n  install:\n    $patch: replace\n"),
        PatchError::Delete { .. }
    ));
}

// JSON6902

#[test]
fn json6902_operations_apply_to_the_v1alpha1_document() {
    let docs = patched(
        r#"[
            {"op": "add", "path": "/machine/certSANs/-", "value": "c"},
            {"op": "add", "path": "/machine/certSANs/0", "value": "first"},
            {"op": "replace", "path": "/machine/install/disk", "value": "/dev/vda"},
            {"op": "remove", "path": "/machine/features/hostDNS"},
            {"op": "copy", "from": "/machine/install/disk", "path": "/machine/install/copy"},
            {"op": "move", "from": "/machine/install/copy", "path": "/machine/kubelet/extraArgs/a~1b"},
            {"op": "test", "path": "/machine/kubelet/extraArgs/a~1b", "value": "/dev/vda"},
            {"op": "test", "path": "/machine/features/kubePrism/port", "value": 7445.0}
        ]"#,
    );
    let machine = &docs[0]["machine"];
    assert_eq!(machine["certSANs"], json!(["first", "a", "c"]));
    assert_eq!(
        machine["install"],
        json!({"disk": "/dev/vda", "wipe": false})
    );
    assert!(machine["features"].get("hostDNS").is_none());
    assert_eq!(machine["kubelet"]["extraArgs"]["a/b"], "/dev/vda");
    assert_eq!(docs[1], config()[1], "other documents are untouched");
}

#[test]
fn json6902_in_yaml_form_is_recognised() {
    let docs = patched("- op: add\n  path: /machine/nodeLabels\n  value:\n    tier: web\n");
    assert_eq!(docs[0]["machine"]["nodeLabels"], json!({"tier": "web"}));
}

#[test]
fn json6902_failures_name_the_operation_not_the_values() {
    let operation = |index: usize, op: &str, path: &str, reason: &str| PatchError::Operation {
        index,
        op: op.into(),
        path: path.into(),
        reason: reason.into(),
    };
    assert_eq!(
        failure(
            r#"[{"op": "add", "path": "/machine/certSANs/-", "value": "x"}, {"op": "replace", "path": "/machine/missing", "value": 1}]"#
        ),
        operation(1, "replace", "/machine/missing", "path not found")
    );
    assert_eq!(
        failure(r#"[{"op": "remove", "path": "/machine/certSANs/7"}]"#),
        operation(
            0,
            "remove",
            "/machine/certSANs/7",
            "list index out of range"
        )
    );
    assert_eq!(
        failure(r#"[{"op": "add", "path": "/no/parent", "value": 1}]"#),
        operation(0, "add", "/no/parent", "parent path not found")
    );
    assert_eq!(
        failure(r#"[{"op": "frobnicate", "path": "/machine"}]"#),
        operation(
            0,
            "frobnicate",
            "/machine",
            "op must be add, remove, replace, move, copy or test"
        )
    );
    assert_eq!(
        failure(r#"[{"op": "add", "path": "/machine/x"}]"#),
        operation(0, "add", "/machine/x", "`value` is missing")
    );
    assert_eq!(
        failure(r#"[{"op": "move", "from": "/machine", "path": "/machine/inner"}]"#),
        operation(
            0,
            "move",
            "/machine/inner",
            "cannot move a value into itself"
        )
    );
    let error = failure(r#"[{"op": "test", "path": "/cluster/secret", "value": "guess"}]"#);
    assert_eq!(
        error,
        operation(
            0,
            "test",
            "/cluster/secret",
            "test failed: the value differs"
        )
    );
    assert!(!error.to_string().contains("s3cr3t"));
}

// Telling the kinds apart.

#[test]
fn unrecognisable_patches_are_refused() {
    assert_eq!(failure(""), PatchError::Empty);
    assert_eq!(failure("# nothing\n---\n"), PatchError::Empty);
    assert!(matches!(
        failure("just a string"),
        PatchError::Unrecognised(_)
    ));
    assert!(matches!(
        failure("[1]\n---\n[2]\n"),
        PatchError::Unrecognised(_)
    ));
    assert!(matches!(
        failure("machine: [unclosed\n"),
        PatchError::Yaml(_)
    ));
    assert_eq!(
        failure("[1]"),
        PatchError::Operation {
            index: 0,
            op: "?".into(),
            path: "?".into(),
            reason: "an operation must be a mapping with op and path".into(),
        }
    );
}

#[test]
fn v1_13_image_verification_rules_replace_the_rule_for_their_image() {
    let mut documents = config();
    let first = "apiVersion: v1alpha1\nkind: ImageVerificationConfig\nrules:\n  - image: ghcr.io/*\n    keyless: {issuer: a, subject: b}\n  - image: '*'\n    skip: true\n";
    apply(&mut documents, first, Contract::V1_13).unwrap();
    let second = "apiVersion: v1alpha1\nkind: ImageVerificationConfig\nrules:\n  - image: ghcr.io/*\n    deny: true\n  - image: docker.io/*\n    skip: true\n";
    apply(&mut documents, second, Contract::V1_13).unwrap();
    assert_eq!(
        documents[3]["rules"],
        json!([
            {"image": "ghcr.io/*", "deny": true},
            {"image": "*", "skip": true},
            {"image": "docker.io/*", "skip": true},
        ])
    );
    assert_eq!(
        failure_for(first, Contract::V1_12),
        PatchError::Document {
            document: 0,
            reason: "Talos v1.12 has no document kind \"ImageVerificationConfig\"".into()
        }
    );
}
