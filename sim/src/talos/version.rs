//! Talos release numbers, and the version an installer image reference names.

use std::fmt;
use std::str::FromStr;

/// A Talos release such as `v1.12.6` (or `v1.13.0-beta.1`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TalosVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub pre_release: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a Talos version (expected vMAJOR.MINOR.PATCH)")]
pub struct NotAVersion(pub String);

impl TalosVersion {
    /// Whether this release knows a feature introduced in `major.minor`.
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }
}

impl FromStr for TalosVersion {
    type Err = NotAVersion;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || NotAVersion(text.to_string());
        let bare = text.strip_prefix('v').ok_or_else(invalid)?;
        let (numbers, pre_release) = match bare.split_once('-') {
            Some((numbers, pre)) if !pre.is_empty() => (numbers, Some(pre.to_string())),
            Some(_) => return Err(invalid()),
            None => (bare, None),
        };
        let mut parts = numbers.split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => Ok(Self {
                major,
                minor,
                patch,
                pre_release,
            }),
            _ => Err(invalid()),
        }
    }
}

impl fmt::Display for TalosVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre_release {
            write!(f, "-{pre}")?;
        }
        Ok(())
    }
}

/// The tag of an image reference, ignoring a registry port and a digest:
/// `factory.talos.dev/installer/abc:v1.12.6@sha256:…` → `v1.12.6`.
pub fn image_tag(reference: &str) -> Option<&str> {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    let name = without_digest.rsplit('/').next().unwrap_or(without_digest);
    name.split_once(':')
        .map(|(_, tag)| tag)
        .filter(|t| !t.is_empty())
}

/// The Talos version an installer image installs, from its tag.
pub fn installer_version(reference: &str) -> Result<TalosVersion, NotAVersion> {
    image_tag(reference)
        .ok_or_else(|| NotAVersion(format!("{reference} (no tag)")))?
        .parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_releases_and_pre_releases() {
        let v: TalosVersion = "v1.12.6".parse().unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 12, 6));
        assert_eq!(v.to_string(), "v1.12.6");
        let beta: TalosVersion = "v1.13.0-beta.1".parse().unwrap();
        assert_eq!(beta.pre_release.as_deref(), Some("beta.1"));
        assert_eq!(beta.to_string(), "v1.13.0-beta.1");
        for bad in [
            "1.12.6",
            "v1.12",
            "v1.12.6.1",
            "vx.y.z",
            "v1.12.6-",
            "latest",
        ] {
            assert!(bad.parse::<TalosVersion>().is_err(), "{bad}");
        }
        assert!(v.at_least(1, 12) && v.at_least(1, 11) && !v.at_least(1, 13));
    }

    #[test]
    fn finds_the_tag_of_an_image_reference() {
        assert_eq!(
            image_tag("ghcr.io/siderolabs/installer:v1.12.6"),
            Some("v1.12.6")
        );
        assert_eq!(
            image_tag("registry.local:5000/installer/abc:v1.11.3@sha256:00ff"),
            Some("v1.11.3")
        );
        assert_eq!(image_tag("registry.local:5000/installer"), None);
        assert_eq!(image_tag("installer:"), None);
        assert_eq!(
            installer_version("factory.talos.dev/installer/376567:v1.12.6")
                .unwrap()
                .to_string(),
            "v1.12.6"
        );
        assert!(installer_version("ghcr.io/siderolabs/installer:latest").is_err());
    }
}
