//! Talos versions and the config contract each implies (its minor version):
//! which fields and documents Talos itself generates and accepts, and which
//! Kubernetes versions it runs. Facts from Talos' `VersionContract`,
//! `constants.DefaultKubernetesVersion` and compatibility tables.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use super::ConfigError;

/// The config contracts hct generates for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contract {
    V1_11,
    V1_12,
}

impl Contract {
    /// Talos 1.12 moved network settings out of `machine.network` into
    /// documents (`HostnameConfig`, `LinkConfig`, `DHCPv4Config`, …) and the
    /// v1.12 schema no longer has `machine.network.interfaces`/`hostname`.
    pub fn multidoc_network_config(self) -> bool {
        self >= Contract::V1_12
    }

    /// `machine.features.{rbac,stableHostname,apidCheckExtKeyUsage}` and
    /// `cluster.apiServer.disablePodSecurityPolicy`: always on since long
    /// before 1.11, emitted until 1.11, hidden (and unknown) from 1.12.
    pub fn legacy_always_on_flags(self) -> bool {
        self <= Contract::V1_11
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
        }
    }

    /// The Kubernetes minors Talos supports: (oldest, newest).
    pub fn supported_kubernetes_minors(self) -> (u32, u32) {
        match self {
            Contract::V1_11 => (29, 34),
            Contract::V1_12 => (30, 35),
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
        match self {
            Contract::V1_11 => COMMON,
            Contract::V1_12 => V1_12,
        }
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Contract::V1_11 => "v1.11",
            Contract::V1_12 => "v1.12",
        })
    }
}

/// `major.minor.patch` with an optional pre-release (`-beta.1`), written
/// with or without a leading `v`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Semver {
    major: u32,
    minor: u32,
    patch: u32,
    pre_release: Option<String>,
}

impl Semver {
    fn parse(text: &str) -> Option<Self> {
        let text = text.strip_prefix('v').unwrap_or(text);
        let (core, pre_release) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let mut parts = core.split('.');
        let mut number = || -> Option<u32> {
            let part = parts.next()?;
            let digits_only = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
            digits_only.then(|| part.parse().ok()).flatten()
        };
        let (major, minor, patch) = (number()?, number()?, number()?);
        if parts.next().is_some() {
            return None;
        }
        let pre_release = match pre_release {
            Some(pre)
                if !pre.is_empty()
                    && pre.split('.').all(|id| {
                        !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric())
                    }) =>
            {
                Some(pre.to_owned())
            }
            Some(_) => return None,
            None => None,
        };
        Some(Self {
            major,
            minor,
            patch,
            pre_release,
        })
    }
}

impl Semver {
    /// Release order (semver): a pre-release comes before its release, and
    /// pre-releases compare part by part, numbers as numbers
    /// (`-alpha.9` < `-alpha.10` < `-beta.1`).
    fn precedes(&self, other: &Semver) -> bool {
        let core = |v: &Semver| (v.major, v.minor, v.patch);
        match core(self).cmp(&core(other)) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => match (&self.pre_release, &other.pre_release) {
                (Some(a), Some(b)) => compare_pre_releases(a, b) == Ordering::Less,
                (Some(_), None) => true,
                _ => false,
            },
        }
    }
}

fn compare_pre_releases(a: &str, b: &str) -> Ordering {
    let part = |p: &str| match p.parse::<u64>() {
        // Numeric identifiers sort before alphanumeric ones.
        Ok(n) => (0, n, String::new()),
        Err(_) => (1, 0, p.to_string()),
    };
    a.split('.').map(part).cmp(b.split('.').map(part))
}

impl fmt::Display for Semver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre_release {
            write!(f, "-{pre}")?;
        }
        Ok(())
    }
}

/// A Talos release, e.g. `v1.12.6`; its minor picks the [`Contract`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TalosVersion {
    version: Semver,
    contract: Contract,
}

impl TalosVersion {
    pub fn contract(&self) -> Contract {
        self.contract
    }

    /// Whether going from `self` to `next` would be a downgrade.
    pub fn is_newer_than(&self, next: &TalosVersion) -> bool {
        next.version.precedes(&self.version)
    }
}

impl FromStr for TalosVersion {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let unsupported = || ConfigError::UnsupportedTalosVersion(text.to_owned());
        let version = Semver::parse(text).ok_or_else(unsupported)?;
        let contract = match (version.major, version.minor) {
            (1, 11) => Contract::V1_11,
            (1, 12) => Contract::V1_12,
            _ => return Err(unsupported()),
        };
        Ok(Self { version, contract })
    }
}

/// `v1.12.6`: the form image tags use.
impl fmt::Display for TalosVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.version.fmt(f)
    }
}

/// A Kubernetes release, e.g. `v1.35.2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesVersion(Semver);

impl KubernetesVersion {
    const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self(Semver {
            major,
            minor,
            patch,
            pre_release: None,
        })
    }

    /// Checks Talos' support range for `contract`.
    pub(crate) fn check_supported_by(&self, talos: &TalosVersion) -> Result<(), ConfigError> {
        let (oldest, newest) = talos.contract.supported_kubernetes_minors();
        if self.0.major == 1 && (oldest..=newest).contains(&self.0.minor) {
            Ok(())
        } else {
            Err(ConfigError::UnsupportedKubernetesVersion {
                kubernetes: self.to_string(),
                talos: talos.to_string(),
                oldest: format!("v1.{oldest}"),
                newest: format!("v1.{newest}"),
            })
        }
    }
}

impl FromStr for KubernetesVersion {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        Semver::parse(text)
            .map(Self)
            .ok_or_else(|| ConfigError::InvalidInput {
                field: "kubernetes_version",
                reason: format!("{text:?} is not a version like v1.35.2"),
            })
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_order_like_semver() {
        let v = |text: &str| text.parse::<TalosVersion>().unwrap();
        let ordered = [
            "v1.11.3",
            "v1.12.0-alpha.2",
            "v1.12.0-alpha.10",
            "v1.12.0-beta.1",
            "v1.12.0",
            "v1.12.6",
            "1.12.7",
        ];
        for pair in ordered.windows(2) {
            let (older, newer) = (v(pair[0]), v(pair[1]));
            assert!(newer.is_newer_than(&older), "{newer} after {older}");
            assert!(!older.is_newer_than(&newer), "{older} before {newer}");
        }
        assert!(!v("v1.12.6").is_newer_than(&v("1.12.6")));
        assert_eq!(v("v1.12.6"), v("1.12.6"));
    }

    #[test]
    fn talos_versions_pick_their_contract() {
        for (text, contract, shown) in [
            ("v1.12.6", Contract::V1_12, "v1.12.6"),
            ("1.12.0", Contract::V1_12, "v1.12.0"),
            ("v1.11.3", Contract::V1_11, "v1.11.3"),
            ("v1.12.0-beta.1", Contract::V1_12, "v1.12.0-beta.1"),
        ] {
            let version: TalosVersion = text.parse().unwrap();
            assert_eq!(version.contract(), contract);
            assert_eq!(version.to_string(), shown);
        }
        for text in [
            "v1.10.7",
            "v1.13.0",
            "v2.12.0",
            "1.12",
            "v1.12.6.1",
            "latest",
            "v1.12.x",
            "v1.12.6-",
            "v1.12.6-a b",
            "",
        ] {
            assert!(
                matches!(
                    text.parse::<TalosVersion>(),
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
        for contract in [Contract::V1_11, Contract::V1_12] {
            let talos: TalosVersion = match contract {
                Contract::V1_11 => "v1.11.3",
                Contract::V1_12 => "v1.12.6",
            }
            .parse()
            .unwrap();
            assert!(
                contract
                    .default_kubernetes_version()
                    .check_supported_by(&talos)
                    .is_ok()
            );
        }
    }

    #[test]
    fn kubernetes_support_follows_talos_compatibility() {
        let talos: TalosVersion = "v1.12.6".parse().unwrap();
        let check = |k: &str| {
            k.parse::<KubernetesVersion>()
                .unwrap()
                .check_supported_by(&talos)
        };
        assert!(check("1.30.0").is_ok());
        assert!(check("v1.35.9").is_ok());
        let error = check("v1.36.0").unwrap_err().to_string();
        assert!(
            error.contains("v1.36.0") && error.contains("v1.30") && error.contains("v1.35"),
            "{error}"
        );
        assert!(check("v1.29.9").is_err());
        let old: TalosVersion = "v1.11.3".parse().unwrap();
        assert!(
            "v1.29.0"
                .parse::<KubernetesVersion>()
                .unwrap()
                .check_supported_by(&old)
                .is_ok()
        );
        assert!(
            "v1.35.0"
                .parse::<KubernetesVersion>()
                .unwrap()
                .check_supported_by(&old)
                .is_err()
        );
        assert!("1.35".parse::<KubernetesVersion>().is_err());
        assert!("v1.35.0:evil".parse::<KubernetesVersion>().is_err());
    }
}
