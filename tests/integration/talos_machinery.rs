//! hct's machine configs judged by Talos itself: `talos-check` (built by
//! `scripts/ensure-peers` from tests/talos-check/main.go against
//! `github.com/siderolabs/talos/pkg/machinery` at each release) loads each
//! config with Talos' config loader, which decodes strictly, and runs Talos'
//! `Validate` in cloud mode with `validation.WithStrict()`, per document and
//! for the whole config.
//!
//! Covered: both roles, without a patch, with a strategic merge patch and
//! with a JSON6902 patch, for each contract hct generates (v1.11 at v1.11.3,
//! v1.12 at v1.12.6, v1.13 at the newest v1.13 checker), each judged by its
//! own release; the same configs judged by the next minor (what a node
//! upgraded in place keeps); and the checker itself, on configs Talos must
//! refuse and on a hand-written v1.13 config. The configs the cluster
//! end-to-end tests applied to hct-sim are judged there
//! (tests/e2e/cluster_e2e/).
//!
//! Talos v1.14 (at v1.14.0-rc.1) judges hct's v1.14 contract, hct's v1.13
//! configs (the upgrade) and the broken ones where this machine has its
//! checker: the Go module proxy does not serve that machinery, so
//! scripts/ensure-peers builds it from the source beside the clone
//! (`../shared`), and without it the v1.14 tests say `SKIPPED` and judge
//! nothing with v1.14 (`peers::Peers::talos_release_of_minor_or_skip`).

use crate::peers;
use crate::support;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use hct::network_plan::NetworkPlan;
use hct::talos::{NodeConfigInput, Role, Secrets};
use peers::talos_check::{Config, assert_clean, check, check_with, kinds};

const SCHEMATIC: &str = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";

/// A hand-written Talos v1.13 worker config (see its header).
const V1_13_WORKER: &str = include_str!("../talos-check/testdata/v1.13-worker.yaml");

/// The (contract release, patch) cases: every role gets every patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Patch {
    None,
    Strategic,
    Json6902,
}

const PATCHES: [Patch; 3] = [Patch::None, Patch::Strategic, Patch::Json6902];
const ROLES: [Role; 2] = [Role::ControlPlane, Role::Worker];

impl Patch {
    fn label(self) -> &'static str {
        match self {
            Patch::None => "no-patch",
            Patch::Strategic => "strategic-merge",
            Patch::Json6902 => "json6902",
        }
    }

    /// Patches a user could well write. The strategic merge patch adds a
    /// document where the contract has multi-document network config. From
    /// v1.14 the kubelet's settings are written in its `KubeletConfig`
    /// document (Talos refuses them in both places, and so does hct).
    fn config_patches(self, talos_version: &str) -> Vec<String> {
        let v1_14 = talos_version.starts_with("v1.14.");
        match self {
            Patch::None => Vec::new(),
            Patch::Strategic if v1_14 => vec![
                "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n---\napiVersion: v1alpha1\n\
                 kind: KubeletConfig\nextraArgs:\n  max-pods: \"150\"\n---\napiVersion: v1alpha1\n\
                 kind: TimeSyncConfig\nntp:\n  servers:\n    - ntp1.hetzner.de\n"
                    .to_owned(),
            ],
            // v1.14 keeps the install in UnattendedInstallConfig.
            Patch::Json6902 if v1_14 => vec![
                r#"[{"op": "add", "path": "/machine/sysctls", "value": {"net.core.somaxconn": "65535"}},
                    {"op": "replace", "path": "/machine/features/diskQuotaSupport", "value": false}]"#
                    .to_owned(),
            ],
            Patch::Strategic => {
                let mut patch = String::from(
                    "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n  kubelet:\n    \
                     extraArgs:\n      max-pods: \"150\"\n",
                );
                if !talos_version.starts_with("v1.11.") {
                    patch.push_str(
                        "---\napiVersion: v1alpha1\nkind: TimeSyncConfig\nntp:\n  servers:\n    \
                         - ntp1.hetzner.de\n",
                    );
                }
                vec![patch]
            }
            Patch::Json6902 => vec![
                r#"[{"op": "add", "path": "/machine/sysctls", "value": {"net.core.somaxconn": "65535"}},
                    {"op": "add", "path": "/machine/kubelet/extraArgs/max-pods", "value": "150"},
                    {"op": "replace", "path": "/machine/install/wipe", "value": true}]"#
                    .to_owned(),
            ],
        }
    }
}

fn role_label(role: Role) -> &'static str {
    match role {
        Role::ControlPlane => "controlplane",
        Role::Worker => "worker",
    }
}

fn plan() -> NetworkPlan {
    support::plan::reference(3)
}

/// One bundle per test process (RSA-4096 takes about a second).
fn secrets() -> &'static Secrets {
    static SECRETS: OnceLock<Secrets> = OnceLock::new();
    SECRETS.get_or_init(|| Secrets::generate().expect("secrets generate"))
}

fn input(talos_version: &str, role: Role, patch: Patch) -> NodeConfigInput {
    NodeConfigInput {
        cluster_name: "demo".into(),
        talos_version: talos_version.parse().unwrap(),
        kubernetes_version: None,
        schematic_id: SCHEMATIC.into(),
        install_disk: None,
        hostname: match role {
            Role::ControlPlane => "demo-cp-1".into(),
            Role::Worker => "demo-general-1".into(),
        },
        role,
        node_labels: BTreeMap::from([("topology.example.com/rack".into(), "r1".into())]),
        node_taints: BTreeMap::new(),
        inline_manifests: Vec::new(),
        config_patches: patch.config_patches(talos_version),
        interface: None,
        ip: None,
    }
}

/// hct's configs for `talos_version`: both roles × every patch.
fn generated(talos_version: &str) -> Vec<Config> {
    let plan = plan();
    let mut configs = Vec::new();
    for role in ROLES {
        for patch in PATCHES {
            let label = format!("hct-{talos_version}-{}-{}", role_label(role), patch.label());
            let config = hct::talos::generate(&input(talos_version, role, patch), &plan, secrets())
                .unwrap_or_else(|e| panic!("{label}: hct refused to generate: {e}"));
            configs.push(Config {
                label,
                text: config.into_string(),
            });
        }
    }
    configs
}

#[test]
fn v1_11_configs_pass_talos_v1_11_3() {
    let verdicts = check("v1.11.3", &generated("v1.11.3"));
    assert_clean("v1.11.3", &verdicts);
    for verdict in &verdicts {
        assert_eq!(kinds(verdict), ["v1alpha1"], "{}", verdict.label);
    }
}

#[test]
fn v1_12_configs_pass_talos_v1_12_6() {
    let verdicts = check("v1.12.6", &generated("v1.12.6"));
    assert_clean("v1.12.6", &verdicts);
    for verdict in &verdicts {
        let kinds = kinds(verdict);
        for kind in ["v1alpha1", "HostnameConfig", "LinkConfig", "DHCPv4Config"] {
            assert!(kinds.contains(&kind), "{}: {kinds:?}", verdict.label);
        }
        if verdict.label.contains("strategic-merge") {
            assert!(
                kinds.contains(&"TimeSyncConfig"),
                "{}: {kinds:?}",
                verdict.label
            );
        }
    }
}

/// hct installs to disk, so its configs also hold in metal mode, where
/// Talos requires the install section.
#[test]
fn configs_pass_in_metal_mode_too() {
    for release in ["v1.11.3", "v1.12.6"] {
        let verdicts = check_with(release, &generated(release), &["-mode", "metal"]);
        assert_clean(release, &verdicts);
        assert!(verdicts.iter().all(|v| v.report["mode"] == "metal"));
    }
}

/// What Talos only warns about is an error here (`WithStrict`), and the
/// warning is reported either way: a user patch with the deprecated
/// `machine.install.extensions`.
#[test]
fn talos_warnings_fail_strict_validation() {
    let warning = ".machine.install.extensions is deprecated";
    for release in ["v1.11.3", "v1.12.6"] {
        let mut deprecated = input(release, Role::Worker, Patch::None);
        deprecated.config_patches = vec![
            "machine:\n  install:\n    extensions:\n      - image: ghcr.io/siderolabs/gvisor:20250505.0\n"
                .into(),
        ];
        let text = hct::talos::generate(&deprecated, &plan(), secrets())
            .unwrap()
            .into_string();
        let config = || {
            vec![Config {
                label: format!("hct-{release}-worker-with-install-extensions"),
                text: text.clone(),
            }]
        };

        let strict = check(release, &config());
        eprint!("{}", strict[0].describe());
        assert!(!strict[0].valid(), "{}", strict[0].describe());
        assert!(
            strict[0]
                .messages()
                .iter()
                .any(|m| m.contains(&format!("warning: {warning}"))),
            "{}",
            strict[0].describe()
        );

        let lenient = check_with(release, &config(), &["-mode", "cloud", "-strict=false"]);
        assert!(lenient[0].valid(), "{}", lenient[0].describe());
        assert!(
            lenient[0].warnings().iter().any(|w| w.contains(warning)),
            "{}",
            lenient[0].describe()
        );
    }
}

/// A node upgraded in place keeps its config: a v1.11 node's config must
/// still be one Talos v1.12 accepts.
#[test]
fn v1_11_configs_pass_talos_v1_12_6_after_an_upgrade() {
    let verdicts = check("v1.12.6", &generated("v1.11.3"));
    assert_clean("v1.12.6", &verdicts);
}

/// Likewise from v1.12 to the newest v1.13.
#[test]
fn v1_12_configs_pass_talos_v1_13_after_an_upgrade() {
    let release = peers::peers().talos_release_of_minor("v1.13").to_owned();
    let verdicts = check(&release, &generated("v1.12.6"));
    assert_clean(&release, &verdicts);
}

/// Likewise from the newest v1.13 to v1.14 (skipped without the v1.14
/// checker): v1.14 deprecates the v1alpha1 fields hct's v1.13 configs hold
/// the Kubernetes settings in, and must still take them as they are.
#[test]
fn v1_13_configs_pass_talos_v1_14_after_an_upgrade() {
    let peers = peers::peers();
    let Some(release) = peers.talos_release_of_minor_or_skip("v1.14") else {
        return;
    };
    let verdicts = check(&release, &generated(&peers.talos_release_of_minor("v1.13")));
    assert_clean(&release, &verdicts);
    let good = Config {
        label: "hand-written-v1.13-worker".into(),
        text: V1_13_WORKER.to_owned(),
    };
    assert_clean(&release, &check(&release, &[good]));
}

/// The v1.13 checker on a hand-written v1.13 config, and on one it must refuse.
#[test]
fn v1_13_checker_judges_a_hand_written_v1_13_config() {
    let release = peers::peers().talos_release_of_minor("v1.13").to_owned();
    let good = Config {
        label: "hand-written-v1.13-worker".into(),
        text: V1_13_WORKER.to_owned(),
    };
    let verdicts = check(&release, &[good]);
    assert_clean(&release, &verdicts);
    assert_eq!(
        kinds(&verdicts[0]),
        ["v1alpha1", "HostnameConfig", "LinkConfig", "DHCPv4Config"]
    );

    // A worker must not carry the Talos API CA's key.
    let bad = Config {
        label: "hand-written-v1.13-worker-with-ca-key".into(),
        text: V1_13_WORKER.replacen("    key: \"\"", "    key: aGVsbG8=", 1),
    };
    assert_ne!(bad.text, V1_13_WORKER);
    let verdicts = check(&release, &[bad]);
    assert!(!verdicts[0].valid(), "{}", verdicts[0].describe());
    assert!(
        verdicts[0].messages().iter().any(
            |m| m.contains("issuing Talos API CA key is not allowed on non-controlplane nodes")
        ),
        "{}",
        verdicts[0].describe()
    );
}

/// The checker is not a rubber stamp: hct's own configs, broken by hand in
/// ways Talos refuses, are refused with Talos' words, by every release
/// (v1.14 where this machine has its checker, on a v1.13 config).
#[test]
fn checker_refuses_broken_configs_with_talos_messages() {
    let peers = peers::peers();
    let v1_13 = peers.talos_release_of_minor("v1.13");
    let mut cases = vec![
        ("v1.11.3".to_owned(), "v1.11.3".to_owned()),
        ("v1.12.6".to_owned(), "v1.12.6".to_owned()),
        ("v1.12.6".to_owned(), v1_13.clone()),
    ];
    if let Some(v1_14) = peers.talos_release_of_minor_or_skip("v1.14") {
        cases.push((v1_13, v1_14));
    }
    for (talos_version, release) in cases {
        let talos_version = talos_version.as_str();
        let config = hct::talos::generate(
            &input(talos_version, Role::ControlPlane, Patch::None),
            &plan(),
            secrets(),
        )
        .unwrap()
        .into_string();
        let endpoint = "endpoint: https://10.0.128.17:6443";
        assert!(config.contains(endpoint), "no {endpoint:?} in the config");
        let broken = [
            // Strict decoding: a field Talos does not know (at the top of
            // the v1alpha1 document, which comes first).
            (
                "unknown-field",
                format!("notAField: true\n{config}"),
                "notAField",
            ),
            // Validation: the cluster endpoint must be a URL with a host.
            (
                "bad-endpoint",
                config.replacen(endpoint, "endpoint: not a url", 1),
                "controlplane endpoint",
            ),
            // Validation: a worker must not hold the CAs' keys.
            (
                "worker-type-with-keys",
                config.replacen("type: controlplane", "type: worker", 1),
                "not allowed on non-controlplane nodes",
            ),
        ];
        let configs: Vec<Config> = broken
            .iter()
            .map(|(what, text, _)| {
                assert_ne!(text, &config, "{what}: the edit did not apply");
                Config {
                    label: format!("broken-{talos_version}-{what}"),
                    text: text.clone(),
                }
            })
            .collect();
        let verdicts = check(&release, &configs);
        for (verdict, (_, _, expected)) in verdicts.iter().zip(&broken) {
            eprint!("{}", verdict.describe());
            assert!(!verdict.valid(), "{release} accepted {}", verdict.label);
            assert!(
                verdict.messages().iter().any(|m| m.contains(expected)),
                "{release} refused {} without saying {expected:?}:\n{}",
                verdict.label,
                verdict.describe()
            );
        }
    }
}

/// hct's v1.13 contract, judged by the newest v1.13 machinery.
#[test]
fn v1_13_configs_pass_talos_v1_13() {
    let release = peers::peers().talos_release_of_minor("v1.13").to_owned();
    let verdicts = check(&release, &generated(&release));
    assert_clean(&release, &verdicts);
    for verdict in &verdicts {
        let kinds = kinds(verdict);
        for kind in ["v1alpha1", "HostnameConfig", "LinkConfig", "DHCPv4Config"] {
            assert!(kinds.contains(&kind), "{}: {kinds:?}", verdict.label);
        }
    }
}

/// hct's v1.14 contract, judged by the v1.14 machinery (skipped without its
/// checker): the Kubernetes settings in the documents that replace the
/// v1alpha1 fields.
#[test]
fn v1_14_configs_pass_talos_v1_14() {
    let Some(release) = peers::peers().talos_release_of_minor_or_skip("v1.14") else {
        return;
    };
    let verdicts = check(&release, &generated(&release));
    assert_clean(&release, &verdicts);
    for verdict in &verdicts {
        let kinds = kinds(verdict);
        for kind in [
            "v1alpha1",
            "KubeClusterConfig",
            "KubeNodeConfig",
            "KubeletConfig",
            "KubeNetworkConfig",
            "HostnameConfig",
            "LinkConfig",
            "DHCPv4Config",
        ] {
            assert!(kinds.contains(&kind), "{}: {kinds:?}", verdict.label);
        }
        if verdict.label.contains("strategic-merge") {
            assert!(
                kinds.contains(&"TimeSyncConfig"),
                "{}: {kinds:?}",
                verdict.label
            );
        }
    }
}

/// Old-form settings users write in `config_patches`: wherever Talos v1.14
/// refuses one beside hct's v1.14 documents, hct refuses the patch first
/// (when it makes the config, at plan time), so no apply finds out on the
/// node. Each field is written straight into hct's config for Talos' own
/// validator, and given to hct as a patch.
#[test]
fn hct_refuses_every_old_form_patch_talos_v1_14_refuses() {
    let Some(release) = peers::peers().talos_release_of_minor_or_skip("v1.14") else {
        return;
    };
    let fields: &[(&str, &str)] = &[
        (
            "machine.kubelet.nodeIP",
            "machine:\n  kubelet:\n    nodeIP:\n      validSubnets: [10.0.128.0/24]\n",
        ),
        (
            "machine.kubelet.extraArgs",
            "machine:\n  kubelet:\n    extraArgs:\n      max-pods: \"150\"\n",
        ),
        (
            "machine.nodeLabels",
            "machine:\n  nodeLabels:\n    rack: r1\n",
        ),
        (
            "machine.nodeTaints",
            "machine:\n  nodeTaints:\n    dedicated: db:NoSchedule\n",
        ),
        (
            "machine.network.nameservers",
            "machine:\n  network:\n    nameservers: [10.0.0.53]\n",
        ),
        (
            "machine.network.searchDomains",
            "machine:\n  network:\n    searchDomains: [example.internal]\n",
        ),
        (
            "machine.features.kubePrism",
            "machine:\n  features:\n    kubePrism:\n      enabled: true\n      port: 7445\n",
        ),
        (
            "machine.install",
            "machine:\n  install:\n    disk: /dev/sda\n",
        ),
        (
            "cluster.network",
            "cluster:\n  network:\n    dnsDomain: cluster.local\n",
        ),
        (
            "cluster.apiServer",
            "cluster:\n  apiServer:\n    certSANs: [api.example.internal]\n",
        ),
        (
            "cluster.controllerManager",
            "cluster:\n  controllerManager:\n    extraArgs:\n      v: \"2\"\n",
        ),
        ("cluster.proxy", "cluster:\n  proxy:\n    disabled: false\n"),
        (
            "cluster.coreDNS",
            "cluster:\n  coreDNS:\n    disabled: true\n",
        ),
        (
            "cluster.discovery",
            "cluster:\n  discovery:\n    enabled: true\n",
        ),
        (
            "cluster.allowSchedulingOnControlPlanes",
            "cluster:\n  allowSchedulingOnControlPlanes: true\n",
        ),
    ];
    let plan = plan();
    let base = hct::talos::generate(
        &input(&release, Role::ControlPlane, Patch::None),
        &plan,
        secrets(),
    )
    .unwrap()
    .into_string();
    let mut configs = Vec::new();
    for (field, patch) in fields {
        // Into the v1alpha1 document (the first) as Talos would load it.
        let (main, rest) = base.split_once("\n---\n").unwrap();
        let mut main: serde_yaml_ng::Value = serde_yaml_ng::from_str(main).unwrap();
        let extra: serde_yaml_ng::Value = serde_yaml_ng::from_str(patch).unwrap();
        merge(&mut main, extra);
        configs.push(Config {
            label: field.replace('.', "-"),
            text: format!("{}---\n{rest}", serde_yaml_ng::to_string(&main).unwrap()),
        });
        let mut patched = input(&release, Role::ControlPlane, Patch::None);
        patched.config_patches = vec![(*patch).to_string()];
        let error = hct::talos::generate(&patched, &plan, secrets())
            .err()
            .unwrap_or_else(|| panic!("{field}: hct took a patch Talos v1.14 refuses"));
        // Named as the field, or the section it is in (`machine.kubelet`).
        let error = error.to_string();
        let named = error
            .split_once("document and ")
            .and_then(|(_, rest)| rest.split_once(':'))
            .map(|(named, _)| named);
        assert!(
            named.is_some_and(|named| field.starts_with(named)),
            "{field}: {error}"
        );
    }
    for verdict in check(&release, &configs) {
        assert!(
            !verdict.valid(),
            "{}: Talos takes it, so hct need not refuse it\n{}",
            verdict.label,
            verdict.describe()
        );
    }
}

/// Maps merge, anything else is replaced.
fn merge(into: &mut serde_yaml_ng::Value, from: serde_yaml_ng::Value) {
    match (into, from) {
        (serde_yaml_ng::Value::Mapping(into), serde_yaml_ng::Value::Mapping(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}
