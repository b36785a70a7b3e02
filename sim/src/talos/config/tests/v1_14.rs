//! Talos v1.14 configs: the Kubernetes settings in their own documents,
//! read as the same config as their v1.13 equivalent, and each document
//! refused beside the v1alpha1 fields it replaces.

use super::*;

const V1_14: &str = "v1.14.0";

fn v1_14_node(control_plane: bool) -> SampleNode {
    let mut node = SampleNode::new(control_plane, V1_14, "10.0.0.1");
    node.hostname = Some(if control_plane { "cp-1" } else { "w-1" }.into());
    node
}

/// `config` and `documents` (YAML documents, `---` between them).
fn with(config: &str, documents: &str) -> String {
    format!("{config}---\n{documents}")
}

/// The parsed config without what tells releases apart.
fn comparable(mut config: MachineConfig) -> MachineConfig {
    config.install_image = String::new();
    config.installs = v("v0.0.0");
    config.text = Secret::new("");
    // The samples differ there (only the v1.14 one encrypts etcd); what
    // both forms give is `components`' own test.
    config.components = Default::default();
    config
}

#[test]
fn a_v1_14_config_reads_as_its_v1_13_equivalent() {
    let cluster = cluster();
    for control_plane in [true, false] {
        let mut v1_13 = v1_14_node(control_plane);
        v1_13.talos = "v1.13.9".into();
        let mut v1_14 = v1_14_node(control_plane);
        if control_plane {
            v1_13.kubernetes = Some("v1.35.2".into());
            v1_14.kubernetes = Some("v1.35.2".into());
        }
        let old = parse(&cluster.machine_config(&v1_13), Some(&v("v1.13.9"))).unwrap();
        let text = cluster.machine_config(&v1_14);
        assert!(text.contains("kind: KubeClusterConfig"), "{text}");
        let new = parse(&text, Some(&v(V1_14))).unwrap();
        assert_eq!(new.installs, v(V1_14));
        assert_eq!(
            comparable(new),
            comparable(old),
            "control plane: {control_plane}"
        );
    }
}

/// A control plane's config in the shape hct sends Talos v1.14.
fn hct_shaped() -> String {
    let cluster = cluster();
    let config = edit(&cluster.machine_config(&v1_14_node(true)), |d| {
        d["machine"]["certSANs"] = serde_yaml_ng::from_str("[10.0.128.10]").unwrap();
        d["machine"]["features"] = serde_yaml_ng::from_str("{diskQuotaSupport: true}").unwrap();
        d["cluster"]["etcd"] =
            serde_yaml_ng::from_str("{advertisedSubnets: [10.0.128.0/24]}").unwrap();
    });
    with(
        &config,
        "apiVersion: v1alpha1\nkind: DiscoveryServiceConfig\nname: default\nendpoint: https://discovery.talos.dev/\n\
         ---\napiVersion: v1alpha1\nkind: ResolverConfig\nhostDNS: {enabled: true, forwardKubeDNSToHost: true}\n\
         ---\napiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\n\
         ---\napiVersion: v1alpha1\nkind: KubeNodeConfig\nnodeIP: {validSubnets: [10.0.128.0/24]}\n\
         labels: {node.kubernetes.io/exclude-from-external-load-balancers: ''}\n\
         taints: {node-role.kubernetes.io/control-plane: NoSchedule}\n\
         ---\napiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.37.2\n\
         extraArgs: {rotate-server-certificates: 'true'}\n\
         ---\napiVersion: v1alpha1\nkind: KubeNetworkConfig\ndnsDomain: cluster.local\n\
         podSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\nnodeCIDRMaskSizeIPv4: 25\n\
         ---\napiVersion: v1alpha1\nkind: KubeControllerManagerConfig\n\
         image: registry.k8s.io/kube-controller-manager:v1.37.2\nextraArgs: {cloud-provider: external}\n\
         ---\napiVersion: v1alpha1\nkind: KubeSchedulerConfig\nimage: registry.k8s.io/kube-scheduler:v1.37.2\n\
         ---\napiVersion: v1alpha1\nkind: KubeProxyConfig\nenabled: false\nimage: registry.k8s.io/kube-proxy:v1.37.2\n\
         ---\napiVersion: v1alpha1\nkind: KubeCoreDNSConfig\nenabled: true\n\
         ---\napiVersion: v1alpha1\nkind: KubePrismConfig\nport: 7445\n\
         ---\napiVersion: v1alpha1\nkind: KubeAuthorizerConfig\nname: node\ntype: Node\n\
         ---\napiVersion: v1alpha1\nkind: KubeAuthorizerConfig\nname: rbac\ntype: RBAC\n\
         ---\napiVersion: v1alpha1\nkind: KubeInlineManifestConfig\nname: cilium\n\
         manifest: \"apiVersion: v1\\nkind: Namespace\\nmetadata:\\n  name: cilium\\n\"\n\
         ---\napiVersion: v1alpha1\nkind: KubeInlineManifestConfig\nname: ccm\nmanifest: ''\n",
    )
}

#[test]
fn reads_what_hct_sends_a_v1_14_control_plane() {
    let text = with(
        &hct_shaped(),
        "apiVersion: v1alpha1\nkind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.37.2\n\
         certExtraSANs: [api.example.com]\n",
    );
    let config = parse(&text, Some(&v(V1_14))).unwrap();
    assert_eq!(config.cluster_name, "test");
    assert_eq!(config.endpoint, "https://10.0.128.10:6443");
    assert_eq!(config.hostname.as_deref(), Some("cp-1"));
    assert!(config.kubernetes_ca.key.is_some());
    let versions = [
        config.kubernetes_version.as_deref(),
        config.controller_manager_version.as_deref(),
        config.scheduler_version.as_deref(),
        config.kubelet_version.as_deref(),
    ];
    assert_eq!(versions, [Some("v1.37.2"); 4]);
    assert_eq!(config.kube_proxy, None, "disabled");
    assert_eq!(config.core_dns, Some(None), "Talos' default image");
    let subnets = &config.subnets;
    assert_eq!(subnets.kubelet.describe(), "[10.0.128.0/24]");
    assert_eq!(subnets.etcd_advertised.describe(), "[10.0.128.0/24]");
    assert_eq!(subnets.pods, vec!["10.244.0.0/16".parse().unwrap()]);
    assert_eq!(subnets.services, vec!["10.96.0.0/12".parse().unwrap()]);
    assert_eq!(subnets.node_cidr_mask_ipv4, 25);
    let names: Vec<&str> = config
        .inline_manifests
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["cilium", "ccm"], "in document order");
    assert!(
        config.inline_manifests[0]
            .1
            .expose()
            .contains("name: cilium")
    );
}

#[test]
fn inline_manifests_come_from_the_documents_then_v1alpha1() {
    let base = cluster().machine_config(&v1_14_node(true));
    let legacy = edit(&base, |d| {
        d["cluster"]["inlineManifests"] =
            serde_yaml_ng::from_str("[{name: legacy, contents: ''}]").unwrap();
    });
    let only_legacy = parse(&legacy, Some(&v(V1_14))).unwrap();
    assert_eq!(only_legacy.inline_manifests.len(), 1);
    let both = with(
        &legacy,
        "apiVersion: v1alpha1\nkind: KubeInlineManifestConfig\nname: b\nmanifest: ''\n\
         ---\napiVersion: v1alpha1\nkind: KubeInlineManifestConfig\nname: a\nmanifest: ''\n",
    );
    let parsed = parse(&both, Some(&v(V1_14))).unwrap();
    let names: Vec<&str> = parsed
        .inline_manifests
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["b", "a", "legacy"]);
    let twice = with(
        &both,
        "apiVersion: v1alpha1\nkind: KubeInlineManifestConfig\nname: a\nmanifest: ''\n",
    );
    assert_eq!(
        reason(&twice, V1_14),
        "duplicate document: KubeInlineManifestConfig/a"
    );
}

#[test]
fn each_document_is_refused_beside_the_fields_it_replaces() {
    let cluster = cluster();
    let control_plane = cluster.machine_config(&v1_14_node(true));
    type Change = fn(&mut Value);
    let cases: &[(&str, Change, &str)] = &[
        (
            "",
            |d| d["cluster"]["clusterName"] = "old".into(),
            "cluster name is already set in the v1alpha1 config (.cluster.clusterName). Please \
             remove it and use only the new KubeClusterConfig document to avoid conflicts",
        ),
        (
            "",
            |d| {
                d["cluster"]["controlPlane"] =
                    serde_yaml_ng::from_str("{endpoint: https://x:6443}").unwrap()
            },
            "cluster endpoint is already set in the v1alpha1 config (.cluster.controlPlane.endpoint). \
             Please remove it and use only the new KubeClusterConfig document to avoid conflicts",
        ),
        (
            "",
            |d| d["cluster"]["ca"] = serde_yaml_ng::from_str("{crt: x}").unwrap(),
            "kube-apiserver CA is already set in v1alpha1 config (.cluster.ca)",
        ),
        (
            "",
            |d| d["cluster"]["id"] = "abc".into(),
            "cluster identity is already configured in .cluster.id/.cluster.secret of the v1alpha1 config",
        ),
        (
            "",
            |d| d["cluster"]["secretboxEncryptionSecret"] = "c2VjcmV0".into(),
            "etcd encryption config is already set in v1alpha1 config",
        ),
        (
            "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.37.2\n",
            |d| d["machine"]["kubelet"] = serde_yaml_ng::from_str("{image: x}").unwrap(),
            "kubelet config is already set in v1alpha1 config (.machine.kubelet)",
        ),
        (
            "kind: KubeNodeConfig\nnodeIP: {validSubnets: [10.0.0.0/8]}\n",
            |d| d["machine"]["nodeLabels"] = serde_yaml_ng::from_str("{a: b}").unwrap(),
            ".machine.nodeLabels is already set in v1alpha1 config",
        ),
        (
            "kind: KubeNodeConfig\nnodeIP: {}\n",
            |d| d["machine"]["kubelet"] = serde_yaml_ng::from_str("{nodeIP: {}}").unwrap(),
            ".machine.kubelet.nodeIP is already set in v1alpha1 config",
        ),
        (
            "kind: KubeNetworkConfig\npodSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\n",
            |d| {
                d["cluster"]["network"] =
                    serde_yaml_ng::from_str("{dnsDomain: cluster.local}").unwrap()
            },
            "cluster network config is already set in the v1alpha1 config (.machine.cluster.network). \
             Please remove it and use only the new KubeNetworkConfig document to avoid conflicts",
        ),
        (
            "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.37.2\n",
            |d| d["cluster"]["apiServer"] = serde_yaml_ng::from_str("{certSANs: [x]}").unwrap(),
            "kube-apiserver config is already set in v1alpha1 config (.cluster.apiServer)",
        ),
        (
            "kind: KubeControllerManagerConfig\nimage: registry.k8s.io/kube-controller-manager:v1.37.2\n",
            |d| d["cluster"]["controllerManager"] = serde_yaml_ng::from_str("{image: x}").unwrap(),
            "kube-controller-manager config is already set in v1alpha1 config (.cluster.controllerManager)",
        ),
        (
            "kind: KubeSchedulerConfig\nimage: registry.k8s.io/kube-scheduler:v1.37.2\n",
            |d| {
                d["machine"]["controlPlane"] =
                    serde_yaml_ng::from_str("{scheduler: {disabled: false}}").unwrap()
            },
            "kube-scheduler config is already set in v1alpha1 config (.machine.controlplane.scheduler)",
        ),
        (
            "kind: KubeProxyConfig\nenabled: false\n",
            |d| d["cluster"]["proxy"] = serde_yaml_ng::from_str("{disabled: true}").unwrap(),
            "cluster proxy config in v1alpha1 config (.machine.cluster.proxy) can't be used with \
             KubeProxyConfig document, please remove it to avoid conflicts",
        ),
        (
            "kind: KubeCoreDNSConfig\nenabled: false\n",
            |d| d["cluster"]["coreDNS"] = serde_yaml_ng::from_str("{disabled: true}").unwrap(),
            "CoreDNS config is already set in v1alpha1 config (.cluster.coreDNS)",
        ),
        (
            "kind: KubePrismConfig\nport: 7445\n",
            |d| {
                d["machine"]["features"] =
                    serde_yaml_ng::from_str("{kubePrism: {enabled: true}}").unwrap()
            },
            "KubePrism config in v1alpha1 config (.machine.features.kubePrism) can't be used with \
             KubePrismConfig document, please remove it to avoid conflicts",
        ),
        (
            "kind: KubeAggregatorCAConfig\nacceptedCAs: []\n",
            |d| d["cluster"]["aggregatorCA"] = serde_yaml_ng::from_str("{crt: x}").unwrap(),
            "kube-apiserver aggregator CA is already set in v1alpha1 config (.cluster.aggregatorCA), \
             please remove it and use the new KubeAggregatorCAConfig document instead",
        ),
        (
            "kind: KubeServiceAccountConfig\nissuer: {}\n",
            |d| d["cluster"]["serviceAccount"] = serde_yaml_ng::from_str("{key: x}").unwrap(),
            "service account is already set in v1alpha1 config (.cluster.serviceAccount)",
        ),
        (
            "kind: KubeAuditPolicyConfig\nconfiguration: {}\n",
            |d| {
                d["cluster"]["apiServer"] =
                    serde_yaml_ng::from_str("{auditPolicy: {kind: Policy}}").unwrap()
            },
            "audit policy config is already set in v1alpha1 config",
        ),
        (
            "kind: KubeAdmissionControlConfig\nname: PodSecurity\nconfiguration: {}\n",
            |d| {
                d["cluster"]["apiServer"] =
                    serde_yaml_ng::from_str("{admissionControl: [{name: PodSecurity}]}").unwrap()
            },
            "admission control plugin config is already set in v1alpha1 config",
        ),
        (
            "kind: DiscoveryServiceConfig\nname: default\nendpoint: https://discovery.talos.dev/\n",
            |d| d["cluster"]["discovery"] = serde_yaml_ng::from_str("{enabled: true}").unwrap(),
            "discovery service is already configured in .cluster.discovery of the v1alpha1 config",
        ),
        (
            "kind: ResolverConfig\nhostDNS: {enabled: true}\n",
            |d| {
                d["machine"]["features"] =
                    serde_yaml_ng::from_str("{hostDNS: {enabled: true}}").unwrap()
            },
            ".machine.features.hostDNS is already set in v1alpha1 config",
        ),
        (
            "kind: ResolverConfig\nnameservers: [{address: 1.1.1.1}]\n",
            |d| {
                d["machine"]["network"] =
                    serde_yaml_ng::from_str("{nameservers: [9.9.9.9]}").unwrap()
            },
            ".machine.network.nameservers is already set in v1alpha1 config",
        ),
    ];
    for (document, change, expected) in cases {
        let mut config = edit(&control_plane, change);
        if !document.is_empty() {
            config = with(&config, &format!("apiVersion: v1alpha1\n{document}"));
        }
        assert_eq!(reason(&config, V1_14), *expected, "{document}");
    }
}

#[test]
fn v1_14_documents_are_not_registered_before_v1_14() {
    let config = cluster().machine_config(&v1_14_node(false));
    let refused = reason(&config, "v1.13.9");
    assert!(
        refused.ends_with(": \"DiscoveryIdentityConfig\" \"v1alpha1\": not registered"),
        "{refused}"
    );
    let unknown = with(
        &config,
        "apiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.37.2\nimag: x\n",
    );
    assert!(
        reason(&unknown, V1_14).ends_with("unknown keys found during decoding:\nimag: x\n"),
        "{}",
        reason(&unknown, V1_14)
    );
}

#[test]
fn the_config_as_a_whole_follows_the_v1_14_rules() {
    let cluster = cluster();
    let worker = cluster.machine_config(&v1_14_node(false));
    let proxy = with(
        &worker,
        "apiVersion: v1alpha1\nkind: KubeProxyConfig\nenabled: false\n",
    );
    assert_eq!(
        reason(&proxy, V1_14),
        "the following document kinds are only allowed on control plane machines: [KubeProxyConfig]"
    );
    let control_plane = cluster.machine_config(&v1_14_node(true));
    let unencrypted = without(&control_plane, "KubeEtcdEncryptionConfig");
    assert_eq!(
        reason(&unencrypted, V1_14),
        "etcd encryption config is required for control plane machines running kube-apiserver"
    );
    let discovery = with(
        &without(&worker, "DiscoveryIdentityConfig"),
        "apiVersion: v1alpha1\nkind: DiscoveryServiceConfig\nname: default\nendpoint: https://d.example/\n",
    );
    assert_eq!(
        reason(&discovery, V1_14),
        "cluster ID (.cluster.id or DiscoveryIdentityConfig) should be set when cluster discovery \
         (DiscoveryServiceConfig) is enabled"
    );
    // A v1.13-shaped control plane (cluster.ca, no encryption config) is
    // refused by v1.14 too, and still taken by v1.13.
    let mut old = v1_14_node(true);
    old.talos = "v1.13.9".into();
    let old = cluster.machine_config(&old);
    assert!(parse(&old, Some(&v("v1.13.9"))).is_ok());
    assert_eq!(
        reason(&old, V1_14),
        "etcd encryption config is required for control plane machines running kube-apiserver"
    );
}

#[test]
fn documents_are_checked_like_the_v1alpha1_fields() {
    let cluster = cluster();
    let control_plane = cluster.machine_config(&v1_14_node(true));
    let other = SampleCluster::generate("other", "https://10.0.128.10:6443").unwrap();
    let foreign = edit_kind(&control_plane, "KubeAPIServerCAConfig", |d| {
        d["issuingCA"]["key"] = other.kubernetes_ca.key.as_ref().unwrap().expose().into();
    });
    assert_eq!(
        reason(&foreign, V1_14),
        "KubeAPIServerCAConfig.issuingCA.key does not belong to the CA certificate"
    );
    let keyless = edit_kind(&control_plane, "KubeAPIServerCAConfig", |d| {
        d["issuingCA"]["key"] = Value::Null;
    });
    assert_eq!(
        reason(&keyless, V1_14),
        "KubeAPIServerCAConfig: issuing CA: key is required"
    );
    let http = control_plane.replace("endpoint: https://", "endpoint: http://");
    assert_eq!(
        reason(&http, V1_14),
        "KubeClusterConfig: cluster endpoint is invalid: \"http://10.0.128.10:6443\" is not an https:// URL"
    );
    let network = |subnets: &str| {
        with(
            &control_plane,
            &format!("apiVersion: v1alpha1\nkind: KubeNetworkConfig\n{subnets}"),
        )
    };
    assert_eq!(
        reason(
            &network("podSubnets: [10.244.0.0/25]\nserviceSubnets: [10.96.0.0/12]\n"),
            V1_14
        ),
        "KubeNetworkConfig: pod subnets: invalid subnet: 10.244.0.0/25 is smaller than the \
         per-node pod CIDR mask size /24"
    );
    let node = with(
        &control_plane,
        "apiVersion: v1alpha1\nkind: KubeNodeConfig\nnodeIP: {validSubnets: ['!nope']}\n",
    );
    assert_eq!(
        reason(&node, V1_14),
        "KubeNodeConfig: nodeIP subnet is not valid: \"nope\""
    );
}

/// The YAML documents of a config (a PEM block's `-----END …-----` line
/// ends in `---` too: only a line of its own separates documents).
fn documents_of(config: &str) -> Vec<String> {
    let mut documents = vec![String::new()];
    for line in config.lines() {
        if line == "---" {
            documents.push(String::new());
        } else if let Some(last) = documents.last_mut() {
            last.push_str(line);
            last.push('\n');
        }
    }
    documents
}

/// A config without its document of `kind`.
fn without(config: &str, kind: &str) -> String {
    let documents: Vec<String> = documents_of(config)
        .into_iter()
        .filter(|d| !d.contains(&format!("kind: {kind}\n")))
        .collect();
    documents.join("---\n")
}

/// Changes the document of `kind` in a config.
fn edit_kind(config: &str, kind: &str, change: impl FnOnce(&mut Value)) -> String {
    let mut documents = documents_of(config);
    let at = documents
        .iter()
        .position(|d| d.contains(&format!("kind: {kind}\n")))
        .unwrap();
    let mut document: Value = serde_yaml_ng::from_str(&documents[at]).unwrap();
    change(&mut document);
    documents[at] = serde_yaml_ng::to_string(&document).unwrap();
    documents.join("---\n")
}

#[test]
fn kubernetes_images_must_be_supported_by_the_running_release() {
    let cluster = cluster();
    let mut node = v1_14_node(true);
    node.kubernetes = Some("v1.38.0".into());
    let config = cluster.machine_config(&node);
    assert_eq!(
        reason(&config, V1_14),
        "KubeAPIServerConfig: kube-apiserver image is not valid: version of Kubernetes 1.38.0 is \
         too new to be used with Talos 1.14.0"
    );
    let worker = edit(&cluster.machine_config(&v1_14_node(false)), |d| {
        d["machine"]["kubelet"] =
            serde_yaml_ng::from_str("{image: 'ghcr.io/siderolabs/kubelet:v1.31.4'}").unwrap();
    });
    assert_eq!(
        reason(&worker, V1_14),
        "v1alpha1.Config: kubelet image is not valid: version of Kubernetes 1.31.4 is too old to \
         be used with Talos 1.14.0"
    );
    let mut old = SampleNode::new(false, "v1.13.9", "10.0.0.1");
    old.kubernetes = Some("v1.38.0".into());
    assert!(
        parse(&cluster.machine_config(&old), Some(&v("v1.13.9"))).is_ok(),
        "v1.13 nodes are not checked (unchanged)"
    );
}

#[test]
fn the_installer_may_come_from_unattended_install_config() {
    let config = cluster().machine_config(&v1_14_node(false));
    let install = "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\n\
                   installer: {image: 'factory.talos.dev/installer/abc:v1.14.1'}\n\
                   provisioning: {diskSelector: {match: 'disk.transport == \"virtio\"'}}\n";
    assert_eq!(
        reason(&with(&config, install), V1_14),
        "UnattendedInstallConfig config is incompatible with v1alpha1 config (.machine.install)"
    );
    let moved = with(
        &edit(&config, |d| d["machine"]["install"] = Value::Null),
        install,
    );
    let parsed = parse(&moved, Some(&v(V1_14))).unwrap();
    assert_eq!(
        parsed.install_image,
        "factory.talos.dev/installer/abc:v1.14.1"
    );
    assert_eq!(parsed.installs, v("v1.14.1"));
}
