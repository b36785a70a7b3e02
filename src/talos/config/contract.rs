//! Talos versions and the config contract each implies (its minor version):
//! which fields and documents Talos itself generates and accepts, and which
//! Kubernetes versions it runs. Facts from Talos' `VersionContract`,
//! `constants.DefaultKubernetesVersion` and compatibility tables.

use std::fmt;

use super::ConfigError;
use crate::talos::release::{KubernetesVersion, TalosVersion};

/// The config contracts hct generates for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contract {
    V1_11,
    V1_12,
    V1_13,
    V1_14,
}

impl Contract {
    /// The contract of a release; an error for releases hct makes no
    /// configs for.
    pub fn of(talos: &TalosVersion) -> Result<Self, ConfigError> {
        match talos.line() {
            (1, 11) => Ok(Contract::V1_11),
            (1, 12) => Ok(Contract::V1_12),
            (1, 13) => Ok(Contract::V1_13),
            (1, 14) => Ok(Contract::V1_14),
            _ => Err(ConfigError::UnsupportedTalosVersion(talos.to_string())),
        }
    }

    /// Talos 1.12 moved network settings out of `machine.network` into
    /// documents (`HostnameConfig`, `LinkConfig`, `DHCPv4Config`, …) and the
    /// v1.12 schema no longer has `machine.network.interfaces`/`hostname`.
    pub fn multidoc_network_config(self) -> bool {
        self >= Contract::V1_12
    }

    /// Whether the v1alpha1 document has a `machine.network` section: the
    /// inline network fields up to 1.11, an empty `{}` in 1.12 (Talos'
    /// generator still writes it then), none from 1.13, whose schema drops
    /// `machine.network` (`VersionContract.KubeSpanMultidocConfig`: the
    /// generator no longer makes the empty section, and KubeSpan moved to a
    /// `KubeSpanConfig` document).
    pub fn machine_network_section(self) -> bool {
        self <= Contract::V1_12
    }

    /// `machine.features.{rbac,stableHostname,apidCheckExtKeyUsage}` and
    /// `cluster.apiServer.disablePodSecurityPolicy`: always on since long
    /// before 1.11, emitted until 1.11, hidden (and unknown) from 1.12.
    pub fn legacy_always_on_flags(self) -> bool {
        self <= Contract::V1_11
    }

    /// Talos 1.14 moved the Kubernetes settings (and the cluster's
    /// discovery identity, host DNS and KubePrism) out of the v1alpha1
    /// document into documents of their own (`KubeNodeConfig`,
    /// `KubeNetworkConfig`, …; `VersionContract.MultidocKubernetesConfigSupported`).
    /// Each of them is mutually exclusive with the fields it replaces.
    pub fn kubernetes_documents(self) -> bool {
        self >= Contract::V1_14
    }

    /// Talos 1.12 generates `machine.install.grubUseUKICmdline: true`.
    pub fn grub_uses_uki_cmdline(self) -> bool {
        self >= Contract::V1_12
    }

    /// The Kubernetes version Talos defaults to.
    pub fn default_kubernetes_version(self) -> KubernetesVersion {
        match self {
            Contract::V1_11 => KubernetesVersion::new(1, 34, 1),
            Contract::V1_12 => KubernetesVersion::new(1, 35, 2),
            Contract::V1_13 => KubernetesVersion::new(1, 36, 3),
            // v1.14.0-rc.1 names 1.37.0-rc.0; the newest 1.37 patch is
            // what a cluster made today should run.
            Contract::V1_14 => KubernetesVersion::new(1, 37, 2),
        }
    }

    /// The Kubernetes minors Talos supports: (oldest, newest).
    pub fn supported_kubernetes_minors(self) -> (u32, u32) {
        match self {
            Contract::V1_11 => (29, 34),
            Contract::V1_12 => (30, 35),
            Contract::V1_13 => (31, 36),
            Contract::V1_14 => (32, 37),
        }
    }

    /// The multi-document kinds Talos accepts beside `v1alpha1` (from the
    /// `oneOf` of its config schema at that release).
    pub(crate) fn document_kinds(self) -> &'static [&'static str] {
        const COMMON: &[&str] = &[
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
        const V1_12: &[&str] = &[
            "ExistingVolumeConfig",
            "RawVolumeConfig",
            "SwapVolumeConfig",
            "UserVolumeConfig",
            "VolumeConfig",
            "ZswapConfig",
            "RegistryAuthConfig",
            "RegistryMirrorConfig",
            "RegistryTLSConfig",
            "ExtensionServiceConfig",
            "PCIDriverRebindConfig",
            "BondConfig",
            "BridgeConfig",
            "NetworkDefaultActionConfig",
            "DHCPv4Config",
            "DHCPv6Config",
            "DummyLinkConfig",
            "EthernetConfig",
            "HCloudVIPConfig",
            "HostnameConfig",
            "KubeSpanEndpoints",
            "Layer2VIPConfig",
            "LinkConfig",
            "LinkAliasConfig",
            "ResolverConfig",
            "NetworkRuleConfig",
            "StaticHostConfig",
            "TimeSyncConfig",
            "VLANConfig",
            "WireguardConfig",
            "EventSinkConfig",
            "KmsgLogConfig",
            "OOMConfig",
            "WatchdogTimerConfig",
            "TrustedRootsConfig",
            "SideroLinkConfig",
        ];
        // The v1.13 schema's `oneOf`, plus `ImageVerificationConfig`, which
        // machinery v1.13 registers (`config/types/security`) but leaves out
        // of the schema.
        const V1_13: &[&str] = &[
            "ExistingVolumeConfig",
            "ExternalVolumeConfig",
            "RawVolumeConfig",
            "SwapVolumeConfig",
            "UserVolumeConfig",
            "VolumeConfig",
            "ZswapConfig",
            "RegistryAuthConfig",
            "RegistryMirrorConfig",
            "RegistryTLSConfig",
            "ExtensionServiceConfig",
            "PCIDriverRebindConfig",
            "BlackholeRouteConfig",
            "BondConfig",
            "BridgeConfig",
            "NetworkDefaultActionConfig",
            "DHCPv4Config",
            "DHCPv6Config",
            "DummyLinkConfig",
            "EthernetConfig",
            "HCloudVIPConfig",
            "HostnameConfig",
            "KubeSpanConfig",
            "KubeSpanEndpoints",
            "Layer2VIPConfig",
            "LinkConfig",
            "LinkAliasConfig",
            "ResolverConfig",
            "RoutingRuleConfig",
            "NetworkRuleConfig",
            "StaticHostConfig",
            "TCPProbeConfig",
            "TimeSyncConfig",
            "VLANConfig",
            "VRFConfig",
            "WireguardConfig",
            "EnvironmentConfig",
            "EventSinkConfig",
            "KmsgLogConfig",
            "OOMConfig",
            "WatchdogTimerConfig",
            "TrustedRootsConfig",
            "SideroLinkConfig",
            "ImageVerificationConfig",
        ];
        // The v1.14 schema's `oneOf`, plus `ImageVerificationConfig` as
        // above; where the schema's name is not the kind Talos registers
        // (`UnattendedInstall`, `KubeSpanEndpoints`), the registered one.
        const V1_14: &[&str] = &[
            "ExistingVolumeConfig",
            "ExternalVolumeConfig",
            "FilesystemTrimConfig",
            "FilesystemScrubConfig",
            "RawVolumeConfig",
            "SwapVolumeConfig",
            "UserVolumeConfig",
            "VolumeConfig",
            "ZswapConfig",
            "DiscoveryIdentityConfig",
            "DiscoveryServiceConfig",
            "ContainerConfig",
            "CRIBaseRuntimeSpecConfig",
            "CRICustomizationConfig",
            "ImageCacheConfig",
            "RegistryAuthConfig",
            "RegistryMirrorConfig",
            "RegistryTLSConfig",
            "ExtensionServiceConfig",
            "PCIDriverRebindConfig",
            "KubeAdmissionControlConfig",
            "KubeAggregatorCAConfig",
            "KubeAPIServerConfig",
            "KubeAPIServerCAConfig",
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
            "KubeletConfig",
            "KubePrismConfig",
            "KubeNetworkConfig",
            "KubeNodeConfig",
            "KubeProxyConfig",
            "KubeSchedulerConfig",
            "KubeServiceAccountConfig",
            "KubeStaticPodConfig",
            "KubeTalosAPIAccessConfig",
            "BGPInstanceConfig",
            "BlackholeRouteConfig",
            "BondConfig",
            "BridgeConfig",
            "NetworkDefaultActionConfig",
            "DHCPv4Config",
            "DHCPv6Config",
            "DummyLinkConfig",
            "EthernetConfig",
            "HCloudVIPConfig",
            "HostnameConfig",
            "HTTPProbeConfig",
            "KubeSpanConfig",
            "KubeSpanEndpointsConfig",
            "Layer2VIPConfig",
            "LinkConfig",
            "LinkAliasConfig",
            "ResolverConfig",
            "RoutingRuleConfig",
            "NetworkRuleConfig",
            "StaticHostConfig",
            "TCPProbeConfig",
            "TimeSyncConfig",
            "VethConfig",
            "VLANConfig",
            "VRFConfig",
            "WireguardConfig",
            "EnvironmentConfig",
            "EtcFileConfig",
            "EventSinkConfig",
            "KernelModuleConfig",
            "KmsgLogConfig",
            "OOMConfig",
            "SecurityProfileConfig",
            "SysctlConfig",
            "SysfsConfig",
            "UdevRulesConfig",
            "UnattendedInstallConfig",
            "WatchdogTimerConfig",
            "TrustedRootsConfig",
            "SideroLinkConfig",
            "LVMLogicalVolumeConfig",
            "LVMVolumeGroupConfig",
            "RAIDArrayConfig",
            "ImageVerificationConfig",
        ];
        match self {
            Contract::V1_11 => COMMON,
            Contract::V1_12 => V1_12,
            Contract::V1_13 => V1_13,
            Contract::V1_14 => V1_14,
        }
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Contract::V1_11 => "v1.11",
            Contract::V1_12 => "v1.12",
            Contract::V1_13 => "v1.13",
            Contract::V1_14 => "v1.14",
        })
    }
}

/// Checks Talos' Kubernetes support range for the release `talos`.
pub(crate) fn check_kubernetes_supported(
    kubernetes: &KubernetesVersion,
    talos: &TalosVersion,
) -> Result<(), ConfigError> {
    let (oldest, newest) = Contract::of(talos)?.supported_kubernetes_minors();
    let (major, minor) = kubernetes.line();
    if major == 1 && (oldest..=newest).contains(&minor) {
        Ok(())
    } else {
        Err(ConfigError::UnsupportedKubernetesVersion {
            kubernetes: kubernetes.to_string(),
            talos: talos.to_string(),
            oldest: format!("v1.{oldest}"),
            newest: format!("v1.{newest}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn talos_versions_pick_their_contract() {
        for (text, contract, shown) in [
            ("v1.12.6", Contract::V1_12, "v1.12.6"),
            ("1.12.0", Contract::V1_12, "v1.12.0"),
            ("v1.11.3", Contract::V1_11, "v1.11.3"),
            ("v1.12.0-beta.1", Contract::V1_12, "v1.12.0-beta.1"),
            ("v1.13.9", Contract::V1_13, "v1.13.9"),
            ("v1.13.0-alpha.1", Contract::V1_13, "v1.13.0-alpha.1"),
            ("v1.14.0", Contract::V1_14, "v1.14.0"),
            ("v1.14.0-rc.1", Contract::V1_14, "v1.14.0-rc.1"),
        ] {
            let version: TalosVersion = text.parse().unwrap();
            assert_eq!(Contract::of(&version).unwrap(), contract);
            assert_eq!(version.to_string(), shown);
        }
        for text in ["v1.10.7", "v1.15.0-beta.0", "v2.12.0"] {
            assert!(
                matches!(
                    Contract::of(&text.parse().unwrap()),
                    Err(ConfigError::UnsupportedTalosVersion(_))
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn default_kubernetes_versions_are_talos_defaults() {
        assert_eq!(
            Contract::V1_11.default_kubernetes_version().to_string(),
            "v1.34.1"
        );
        assert_eq!(
            Contract::V1_12.default_kubernetes_version().to_string(),
            "v1.35.2"
        );
        assert_eq!(
            Contract::V1_13.default_kubernetes_version().to_string(),
            "v1.36.3"
        );
        assert_eq!(
            Contract::V1_14.default_kubernetes_version().to_string(),
            "v1.37.2"
        );
        for contract in [
            Contract::V1_11,
            Contract::V1_12,
            Contract::V1_13,
            Contract::V1_14,
        ] {
            let talos: TalosVersion = match contract {
                Contract::V1_11 => "v1.11.3",
                Contract::V1_12 => "v1.12.6",
                Contract::V1_13 => "v1.13.9",
                Contract::V1_14 => "v1.14.0",
            }
            .parse()
            .unwrap();
            assert!(
                check_kubernetes_supported(&contract.default_kubernetes_version(), &talos).is_ok()
            );
        }
    }

    #[test]
    fn kubernetes_support_follows_talos_compatibility() {
        let talos: TalosVersion = "v1.12.6".parse().unwrap();
        let check = |k: &str| check_kubernetes_supported(&k.parse().unwrap(), &talos);
        assert!(check("1.30.0").is_ok());
        assert!(check("v1.35.9").is_ok());
        let error = check("v1.36.0").unwrap_err().to_string();
        assert!(
            error.contains("v1.36.0") && error.contains("v1.30") && error.contains("v1.35"),
            "{error}"
        );
        assert!(check("v1.29.9").is_err());
        let old: TalosVersion = "v1.11.3".parse().unwrap();
        assert!(check_kubernetes_supported(&"v1.29.0".parse().unwrap(), &old).is_ok());
        assert!(check_kubernetes_supported(&"v1.35.0".parse().unwrap(), &old).is_err());
    }

    #[test]
    fn talos_1_13_runs_kubernetes_1_31_to_1_36() {
        let talos: TalosVersion = "v1.13.9".parse().unwrap();
        let check = |k: &str| check_kubernetes_supported(&k.parse().unwrap(), &talos);
        assert!(check("v1.31.0").is_ok());
        assert!(
            check("v1.35.2").is_ok(),
            "a v1.12 cluster's default stays valid"
        );
        assert!(check("v1.36.99").is_ok());
        let error = check("v1.30.9").unwrap_err().to_string();
        assert_eq!(
            error,
            "Kubernetes v1.30.9 is not supported by Talos v1.13.9, which runs v1.31 to v1.36"
        );
        assert!(check("v1.37.0").is_err());
    }

    #[test]
    fn talos_1_13_drops_machine_network_and_adds_document_kinds() {
        assert!(Contract::V1_11.machine_network_section());
        assert!(Contract::V1_12.machine_network_section());
        assert!(!Contract::V1_13.machine_network_section());
        assert!(Contract::V1_13.multidoc_network_config());
        assert!(Contract::V1_13.grub_uses_uki_cmdline());
        assert!(!Contract::V1_13.legacy_always_on_flags());
        let kinds = Contract::V1_13.document_kinds();
        for kind in Contract::V1_12.document_kinds() {
            assert!(kinds.contains(kind), "{kind} still exists in v1.13");
        }
        for kind in [
            "KubeSpanConfig",
            "EnvironmentConfig",
            "ExternalVolumeConfig",
            "BlackholeRouteConfig",
            "RoutingRuleConfig",
            "TCPProbeConfig",
            "VRFConfig",
            "ImageVerificationConfig",
        ] {
            assert!(kinds.contains(&kind), "{kind}");
            assert!(!Contract::V1_12.document_kinds().contains(&kind), "{kind}");
        }
        assert_eq!(kinds.len(), 44);
        assert_eq!(Contract::V1_13.to_string(), "v1.13");
    }
}
