//! The YAML documents of a machine config as written, before validation:
//! the `v1alpha1` document and the typed documents (`apiVersion` + `kind`)
//! that each Talos release knows (the v1.14 Kubernetes documents the
//! emulation reads are in `multidoc`).
//!
//! Only the fields the emulator acts on are read here; unknown keys are
//! refused before, as Talos' strict decoder does (`strict`).

use serde::Deserialize;

use crate::talos::version::TalosVersion;

/// Kinds every supported release (v1.11 on) knows.
const KINDS_V1_11: &[&str] = &[
    "ExistingVolumeConfig",
    "RawVolumeConfig",
    "SwapVolumeConfig",
    "UserVolumeConfig",
    "VolumeConfig",
    "ZswapConfig",
    "ExtensionServiceConfig",
    "PCIDriverRebindConfig",
    "NetworkDefaultActionConfig",
    "EthernetConfig",
    "KubeSpanEndpoints",
    "NetworkRuleConfig",
    "EventSinkConfig",
    "KmsgLogConfig",
    "WatchdogTimerConfig",
    "TrustedRootsConfig",
    "SideroLinkConfig",
];

/// Kinds added in v1.12, which moved the network and registry settings out
/// of the v1alpha1 document.
const KINDS_V1_12: &[&str] = &[
    "RegistryAuthConfig",
    "RegistryMirrorConfig",
    "RegistryTLSConfig",
    "BondConfig",
    "BridgeConfig",
    "DHCPv4Config",
    "DHCPv6Config",
    "DummyLinkConfig",
    "HCloudVIPConfig",
    "HostnameConfig",
    "Layer2VIPConfig",
    "LinkConfig",
    "LinkAliasConfig",
    "ResolverConfig",
    "StaticHostConfig",
    "TimeSyncConfig",
    "VLANConfig",
    "WireguardConfig",
    "OOMConfig",
];

/// Kinds added in v1.13 (its schema's `oneOf`, and `ImageVerificationConfig`,
/// which machinery registers without a schema entry).
const KINDS_V1_13: &[&str] = &[
    "ExternalVolumeConfig",
    "BlackholeRouteConfig",
    "KubeSpanConfig",
    "RoutingRuleConfig",
    "TCPProbeConfig",
    "VRFConfig",
    "EnvironmentConfig",
    "ImageVerificationConfig",
];

/// Kinds added in v1.14, which moved the Kubernetes settings out of the
/// v1alpha1 document, as v1.14's machinery registers them (the schema
/// names `UnattendedInstallConfig` `UnattendedInstall`). Also here, as
/// v1.14 registers them: `ImageCacheConfig`, new in v1.14's schema, and
/// `KubeSpanEndpointsConfig`, the registered name of `KubeSpanEndpoints`.
pub const KINDS_V1_14: &[&str] = &[
    "BGPInstanceConfig",
    "CRIBaseRuntimeSpecConfig",
    "CRICustomizationConfig",
    "ContainerConfig",
    "DiscoveryIdentityConfig",
    "DiscoveryServiceConfig",
    "EtcFileConfig",
    "FilesystemScrubConfig",
    "FilesystemTrimConfig",
    "HTTPProbeConfig",
    "ImageCacheConfig",
    "KernelModuleConfig",
    "KubeAPIServerCAConfig",
    "KubeAPIServerConfig",
    "KubeAdmissionControlConfig",
    "KubeAggregatorCAConfig",
    "KubeAuditPolicyConfig",
    "KubeAuthenticationConfig",
    "KubeAuthorizerConfig",
    "KubeClusterConfig",
    "KubeControllerManagerConfig",
    "KubeCoreDNSConfig",
    "KubeCredentialProviderConfig",
    "KubeEtcdEncryptionConfig",
    "KubeExternalManifestConfig",
    "KubeFlannelCNIConfig",
    "KubeInlineManifestConfig",
    "KubeNetworkConfig",
    "KubeNodeConfig",
    "KubePrismConfig",
    "KubeProxyConfig",
    "KubeSchedulerConfig",
    "KubeServiceAccountConfig",
    "KubeSpanEndpointsConfig",
    "KubeStaticPodConfig",
    "KubeTalosAPIAccessConfig",
    "KubeletConfig",
    "LVMLogicalVolumeConfig",
    "LVMVolumeGroupConfig",
    "RAIDArrayConfig",
    "SecurityProfileConfig",
    "SysctlConfig",
    "SysfsConfig",
    "UdevRulesConfig",
    "UnattendedInstallConfig",
    "VethConfig",
];

/// Kinds that configure a network link, and so may carry routes.
pub const LINK_KINDS: &[&str] = &[
    "LinkConfig",
    "VLANConfig",
    "BondConfig",
    "BridgeConfig",
    "DummyLinkConfig",
    "WireguardConfig",
];

/// Whether the Talos release `talos` accepts documents of `kind`. An
/// unknown release (a custom image label) is taken to know them all.
pub fn is_known_kind(kind: &str, talos: Option<&TalosVersion>) -> bool {
    KINDS_V1_11.contains(&kind)
        || (KINDS_V1_12.contains(&kind) && talos.is_none_or(|v| v.at_least(1, 12)))
        || (KINDS_V1_13.contains(&kind) && talos.is_none_or(|v| v.at_least(1, 13)))
        || (KINDS_V1_14.contains(&kind) && talos.is_none_or(|v| v.at_least(1, 14)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct V1Alpha1 {
    pub machine: Option<Machine>,
    pub cluster: Option<Cluster>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Machine {
    #[serde(rename = "type")]
    pub machine_type: Option<String>,
    pub token: Option<String>,
    pub ca: Option<Ca>,
    pub install: Option<Install>,
    pub network: Option<MachineNetwork>,
    pub features: Option<Features>,
    pub kubelet: Option<Kubelet>,
}

/// `machine.kubelet`: where kubelet takes its node IP from.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Kubelet {
    pub image: Option<String>,
    #[serde(rename = "nodeIP")]
    pub node_ip: Option<NodeIp>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeIp {
    pub valid_subnets: Vec<String>,
}

/// `cluster.network`: the pod and service ranges.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterNetwork {
    pub pod_subnets: Vec<String>,
    pub service_subnets: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Ca {
    pub crt: Option<String>,
    pub key: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Install {
    pub image: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Features {
    pub stable_hostname: Option<bool>,
}

/// `machine.network`: deprecated in v1.12 in favour of the network
/// documents, still accepted; gone from the v1.13 schema and from the
/// configs Talos generates, still loaded.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MachineNetwork {
    pub hostname: Option<String>,
    pub interfaces: Vec<Interface>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Interface {
    /// The link's name, or a `deviceSelector` that picks it.
    pub interface: Option<String>,
    #[serde(rename = "deviceSelector")]
    pub device_selector: Option<serde_yaml_ng::Value>,
    pub routes: Vec<LegacyRoute>,
    pub vlans: Vec<Vlan>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Vlan {
    pub routes: Vec<LegacyRoute>,
}

/// A route of `machine.network.interfaces`: `network` is the destination.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LegacyRoute {
    pub network: String,
    pub gateway: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Cluster {
    pub id: Option<String>,
    pub secret: Option<String>,
    pub token: Option<String>,
    pub cluster_name: Option<String>,
    pub control_plane: Option<ControlPlane>,
    pub ca: Option<Ca>,
    pub etcd: Option<serde_yaml_ng::Value>,
    pub api_server: Option<Component>,
    pub controller_manager: Option<Component>,
    pub scheduler: Option<Component>,
    pub network: Option<ClusterNetwork>,
    pub proxy: Option<Addon>,
    #[serde(rename = "coreDNS")]
    pub core_dns: Option<Addon>,
    pub inline_manifests: Vec<InlineManifest>,
}

/// `cluster.proxy`, `cluster.coreDNS`: Talos renders their manifests
/// unless disabled, with Talos' default image unless one is named.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Addon {
    pub disabled: bool,
    pub image: Option<String>,
}

/// `cluster.inlineManifests[]`: what Talos applies at bootstrap.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct InlineManifest {
    pub name: String,
    pub contents: String,
}

/// `cluster.apiServer`, `cluster.controllerManager`, `cluster.scheduler`:
/// the image's tag is the Kubernetes version the component runs.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Component {
    pub image: Option<String>,
    pub extra_args: Option<serde_yaml_ng::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ControlPlane {
    pub endpoint: Option<String>,
}

/// What the link documents (`LinkConfig`, `VLANConfig`, …) share.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LinkDocument {
    pub name: Option<String>,
    pub routes: Vec<LinkRoute>,
}

/// A route of a link document; no destination means a default route.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LinkRoute {
    pub destination: Option<String>,
    pub gateway: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HostnameDocument {
    pub hostname: Option<String>,
    pub auto: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_documents_arrive_with_v1_12() {
        let v1_11: TalosVersion = "v1.11.3".parse().unwrap();
        let v1_12: TalosVersion = "v1.12.6".parse().unwrap();
        assert!(is_known_kind("VolumeConfig", Some(&v1_11)));
        assert!(!is_known_kind("LinkConfig", Some(&v1_11)));
        assert!(is_known_kind("LinkConfig", Some(&v1_12)));
        assert!(is_known_kind("HostnameConfig", None));
        assert!(!is_known_kind("MachineConfig", Some(&v1_12)));
    }

    #[test]
    fn kubespan_and_environment_documents_arrive_with_v1_13() {
        let v1_12: TalosVersion = "v1.12.6".parse().unwrap();
        let v1_13: TalosVersion = "v1.13.9".parse().unwrap();
        for kind in ["KubeSpanConfig", "EnvironmentConfig", "VRFConfig"] {
            assert!(!is_known_kind(kind, Some(&v1_12)), "{kind}");
            assert!(is_known_kind(kind, Some(&v1_13)), "{kind}");
            assert!(is_known_kind(kind, None), "{kind}");
        }
        assert!(is_known_kind("LinkConfig", Some(&v1_13)));
        assert!(is_known_kind("VolumeConfig", Some(&v1_13)));
    }

    #[test]
    fn kubernetes_documents_arrive_with_v1_14() {
        let v1_13: TalosVersion = "v1.13.9".parse().unwrap();
        let v1_14: TalosVersion = "v1.14.0".parse().unwrap();
        let rc: TalosVersion = "v1.14.0-rc.1".parse().unwrap();
        for kind in [
            "KubeClusterConfig",
            "DiscoveryIdentityConfig",
            "KubeletConfig",
        ] {
            assert!(!is_known_kind(kind, Some(&v1_13)), "{kind}");
            assert!(is_known_kind(kind, Some(&v1_14)), "{kind}");
            assert!(is_known_kind(kind, Some(&rc)), "{kind}");
        }
        assert!(is_known_kind("KubeSpanConfig", Some(&v1_14)));
        assert!(!is_known_kind("UnattendedInstall", Some(&v1_14)));
    }
}
