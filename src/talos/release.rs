//! Talos release versions, and the ones users have paid for.

use std::fmt;

use crate::tf::Diagnostic;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TalosVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl TalosVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Parses `v1.12.6` (the `v` is required, as in Talos image tags).
    pub fn parse(text: &str) -> Result<Self, String> {
        let invalid = || format!("{text:?} is not a Talos release: write it like \"v1.12.6\"");
        let digits = text.strip_prefix('v').ok_or_else(invalid)?;
        let parts: Vec<u32> = digits
            .split('.')
            .map(|p| p.parse::<u32>().map_err(|_| invalid()))
            .collect::<Result<_, _>>()?;
        match parts.as_slice() {
            [major, minor, patch] => Ok(Self::new(*major, *minor, *patch)),
            _ => Err(invalid()),
        }
    }

    /// The machine-config contract of this release: its minor version.
    pub fn contract(&self) -> (u32, u32) {
        (self.major, self.minor)
    }
}

impl fmt::Display for TalosVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Releases with a known problem bad enough to warn about at plan time.
const KNOWN_PROBLEMS: &[(TalosVersion, TalosVersion, &str)] = &[(
    TalosVersion::new(1, 11, 3),
    TalosVersion::new(1, 12, 6),
    "ships containerd 2.1.4, which leaks containerd-shim processes under pod churn until the \
     node runs out of memory or PIDs",
)];

/// A warning when `version` is a release with a known problem.
pub fn known_problem(version: TalosVersion) -> Option<Diagnostic> {
    KNOWN_PROBLEMS
        .iter()
        .find(|(from, fixed, _)| *from <= version && version < *fixed)
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
    fn parses_and_orders_releases() {
        let v = TalosVersion::parse("v1.12.6").unwrap();
        assert_eq!(v, TalosVersion::new(1, 12, 6));
        assert_eq!(v.to_string(), "v1.12.6");
        assert_eq!(v.contract(), (1, 12));
        assert!(TalosVersion::parse("v1.11.3").unwrap() < v);
        for bad in ["1.12.6", "v1.12", "v1.12.x", "latest", ""] {
            assert!(TalosVersion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn warns_about_the_containerd_shim_leak_until_the_fix() {
        let warning = known_problem(TalosVersion::new(1, 11, 3)).unwrap();
        assert!(warning.detail.contains("containerd 2.1.4") && warning.detail.contains("v1.12.6"));
        assert!(known_problem(TalosVersion::new(1, 12, 5)).is_some());
        assert!(known_problem(TalosVersion::new(1, 12, 6)).is_none());
        assert!(known_problem(TalosVersion::new(1, 11, 2)).is_none());
    }
}
