//! Talos releases: the one version type hct uses for them (parsed once,
//! where a version enters hct), Kubernetes versions with the same rules,
//! and the releases with a known problem worth a plan-time warning.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::tf::Diagnostic;

/// Why a version string is not a release. Quotes only the version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("{0:?} is not a Talos release: write it like \"v1.12.6\"")]
    Talos(String),
    #[error("{0:?} is not a version like v1.35.2")]
    Kubernetes(String),
}

/// `major.minor.patch` with an optional pre-release (`-beta.1`), written
/// with or without a leading `v`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Semver {
    major: u32,
    minor: u32,
    patch: u32,
    pre_release: Option<String>,
}

impl Semver {
    const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
            pre_release: None,
        }
    }

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

/// Release order (semver): a pre-release comes before its release, and
/// pre-releases compare part by part, numbers as numbers
/// (`-alpha.9` < `-alpha.10` < `-beta.1`).
impl Ord for Semver {
    fn cmp(&self, other: &Self) -> Ordering {
        let core = |v: &Semver| (v.major, v.minor, v.patch);
        core(self)
            .cmp(&core(other))
            .then_with(|| match (&self.pre_release, &other.pre_release) {
                (Some(a), Some(b)) => compare_pre_releases(a, b),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            })
    }
}

impl PartialOrd for Semver {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
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

/// A Talos release, e.g. `v1.12.6`, in release order. Shown with its `v`,
/// the form image tags use. Which releases hct can make configs for is the
/// config contract's business (`talos::config::Contract`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TalosVersion(Semver);

impl TalosVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self(Semver::new(major, minor, patch))
    }

    /// Parses `v1.12.6` (or `1.12.6`, or a pre-release `v1.13.0-beta.1`).
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        Semver::parse(text)
            .map(Self)
            .ok_or_else(|| VersionError::Talos(text.to_owned()))
    }

    /// `(major, minor)`: the release line.
    pub fn line(&self) -> (u32, u32) {
        (self.0.major, self.0.minor)
    }
}

impl FromStr for TalosVersion {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, VersionError> {
        Self::parse(text)
    }
}

impl fmt::Display for TalosVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A Kubernetes release, e.g. `v1.35.2`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubernetesVersion(Semver);

impl KubernetesVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self(Semver::new(major, minor, patch))
    }

    pub fn parse(text: &str) -> Result<Self, VersionError> {
        Semver::parse(text)
            .map(Self)
            .ok_or_else(|| VersionError::Kubernetes(text.to_owned()))
    }

    /// `(major, minor)`.
    pub fn line(&self) -> (u32, u32) {
        (self.0.major, self.0.minor)
    }

    /// Whether the control plane may move from `self` to `target`: any
    /// patch release of its minor, or the next minor (Kubernetes' version
    /// skew policy, as `talosctl upgrade-k8s` allows it).
    pub fn upgrade_to(&self, target: &KubernetesVersion) -> UpgradeStep {
        let ((major, from), (to_major, to)) = (self.line(), target.line());
        if to_major != major || to < from {
            UpgradeStep::Downgrade
        } else if to > from + 1 {
            UpgradeStep::TooFar { minors: to - from }
        } else {
            UpgradeStep::Allowed
        }
    }
}

/// What [`KubernetesVersion::upgrade_to`] says of a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeStep {
    Allowed,
    /// An older minor (or another major): Kubernetes does not downgrade.
    Downgrade,
    /// More than one minor ahead.
    TooFar {
        minors: u32,
    },
}

impl FromStr for KubernetesVersion {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, VersionError> {
        Self::parse(text)
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Releases with a known problem bad enough to warn about at plan time:
/// from, fixed in, what goes wrong.
const KNOWN_PROBLEMS: &[(TalosVersion, TalosVersion, &str)] = &[(
    TalosVersion::new(1, 11, 3),
    TalosVersion::new(1, 12, 6),
    "ships containerd 2.1.4, which leaks containerd-shim processes under pod churn until the \
     node runs out of memory or PIDs",
)];

/// A warning when `version` is a release with a known problem.
pub fn known_problem(version: &TalosVersion) -> Option<Diagnostic> {
    KNOWN_PROBLEMS
        .iter()
        .find(|(from, fixed, _)| from <= version && version < fixed)
        .map(|(_, fixed, problem)| {
            Diagnostic::warning(
                format!("Talos {version} has a known problem"),
                format!("Talos {version} {problem}. Talos {fixed} fixed it: use {fixed} or newer."),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_moves_one_minor_at_a_time_and_never_back() {
        let k = |text: &str| KubernetesVersion::parse(text).unwrap();
        let from = k("v1.34.1");
        assert_eq!(from.upgrade_to(&k("v1.34.0")), UpgradeStep::Allowed);
        assert_eq!(from.upgrade_to(&k("v1.35.2")), UpgradeStep::Allowed);
        assert_eq!(from.upgrade_to(&k("v1.33.9")), UpgradeStep::Downgrade);
        assert_eq!(from.upgrade_to(&k("v2.34.1")), UpgradeStep::Downgrade);
        assert_eq!(
            from.upgrade_to(&k("v1.36.0")),
            UpgradeStep::TooFar { minors: 2 }
        );
    }

    fn v(text: &str) -> TalosVersion {
        TalosVersion::parse(text).unwrap()
    }

    #[test]
    fn parses_releases_with_or_without_v() {
        assert_eq!(v("v1.12.6"), TalosVersion::new(1, 12, 6));
        assert_eq!(v("1.12.6"), v("v1.12.6"));
        assert_eq!(v("1.12.6").to_string(), "v1.12.6");
        assert_eq!(v("v1.12.0-beta.1").to_string(), "v1.12.0-beta.1");
        assert_eq!(v("v1.12.6").line(), (1, 12));
        for bad in [
            "v1.12",
            "v1.12.x",
            "latest",
            "",
            "1.12",
            "v1.12.6.1",
            "v1.12.6-",
            "v1.12.6-a b",
        ] {
            assert!(TalosVersion::parse(bad).is_err(), "{bad}");
        }
        assert!("v1.35.0:evil".parse::<KubernetesVersion>().is_err());
        assert!("1.35".parse::<KubernetesVersion>().is_err());
        assert_eq!(
            KubernetesVersion::parse("latest").unwrap_err().to_string(),
            "\"latest\" is not a version like v1.35.2"
        );
        assert_eq!(
            "1.35.2".parse::<KubernetesVersion>().unwrap().to_string(),
            "v1.35.2"
        );
    }

    #[test]
    fn releases_order_like_semver() {
        let ordered = [
            "v1.10.7",
            "v1.11.3",
            "v1.12.0-alpha.2",
            "v1.12.0-alpha.10",
            "v1.12.0-beta.1",
            "v1.12.0",
            "v1.12.6",
            "1.12.7",
            "v1.13.0",
        ];
        for pair in ordered.windows(2) {
            let (older, newer) = (v(pair[0]), v(pair[1]));
            assert!(older < newer, "{older} before {newer}");
        }
        assert_eq!(v("v1.12.6").cmp(&v("1.12.6")), Ordering::Equal);
    }

    #[test]
    fn warns_about_the_containerd_shim_leak_until_the_fix() {
        let warning = known_problem(&TalosVersion::new(1, 11, 3)).unwrap();
        assert!(warning.detail.contains("containerd 2.1.4") && warning.detail.contains("v1.12.6"));
        assert!(known_problem(&TalosVersion::new(1, 12, 5)).is_some());
        assert!(known_problem(&TalosVersion::new(1, 12, 6)).is_none());
        assert!(known_problem(&TalosVersion::new(1, 11, 2)).is_none());
    }
}
