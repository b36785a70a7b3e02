//! What `/version` says: the Kubernetes release a control plane runs
//! (the tag of `cluster.apiServer.image` or, from Talos v1.14, of
//! `KubeAPIServerConfig.image` in its machine config, or the Talos
//! release's default) in kube-apiserver's `version.Info` shape; and what
//! each Talos line knows of Kubernetes: its default release and the
//! releases it supports.

use serde_json::{Value, json};

use crate::catalog::Architecture;
use crate::talos::version::TalosVersion;

/// Real builds of releases hct deploys: (gitVersion, gitCommit,
/// buildDate, goVersion), as those releases' kube-apiserver reports them.
const BUILDS: &[(&str, &str, &str, &str)] = &[
    (
        "v1.33.0",
        "60a317eadfcb839692a68eab88b2096f4d708f4f",
        "2025-04-23T13:00:14Z",
        "go1.24.2",
    ),
    (
        "v1.34.0",
        "f28b4c9efbca5c5c0af716d9f2d5702667ee8a45",
        "2025-08-27T10:09:04Z",
        "go1.24.6",
    ),
    (
        "v1.34.1",
        "93248f9ae092f571eb870b7664c534bfc7d00f03",
        "2025-09-09T19:37:20Z",
        "go1.24.6",
    ),
    (
        "v1.35.0",
        "66452049f3d692768c39c797b21b793dce80314e",
        "2025-12-17T12:32:07Z",
        "go1.25.5",
    ),
];

/// A Kubernetes release, `vMAJOR.MINOR.PATCH[-pre]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// As written, `v` included.
    pub git_version: String,
}

impl KubernetesVersion {
    /// Parses `v1.35.2` (pre-releases too); None for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let bare = text.strip_prefix('v')?;
        let numbers = bare.split(['-', '+']).next()?;
        let mut parts = numbers.split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => Some(Self {
                major,
                minor,
                patch,
                git_version: text.to_string(),
            }),
            _ => None,
        }
    }

    /// The release a control plane runs: the config's, or when it names
    /// none (or no release) the default of the Talos release installed.
    pub fn of(configured: Option<&str>, talos: &TalosVersion) -> Self {
        configured
            .and_then(Self::parse)
            .unwrap_or_else(|| Self::talos_default(talos))
    }

    /// The Kubernetes release a Talos release runs by default.
    pub fn talos_default(talos: &TalosVersion) -> Self {
        let default = if talos.at_least(1, 14) {
            "v1.37.0"
        } else if talos.at_least(1, 12) {
            "v1.35.2"
        } else {
            "v1.34.1"
        };
        Self::parse(default).expect("a valid default")
    }

    /// The Kubernetes minors a Talos line supports (Talos' compatibility
    /// table: six minors, the newest its default's), None for a line the
    /// emulation has no table for.
    pub fn supported_minors(talos: &TalosVersion) -> Option<(u32, u32)> {
        match (talos.major, talos.minor) {
            (1, 11) => Some((29, 34)),
            (1, 12) => Some((30, 35)),
            (1, 13) => Some((31, 36)),
            (1, 14) => Some((32, 37)),
            _ => None,
        }
    }

    /// Whether a Talos release runs this Kubernetes release, in Talos'
    /// words when not (`KubernetesVersion.SupportedWith`: at least
    /// `1.<oldest>.0`, below `1.<newest>.99`). Lines without a table pass.
    pub fn supported_with(&self, talos: &TalosVersion) -> Result<(), String> {
        let Some((oldest, newest)) = Self::supported_minors(talos) else {
            return Ok(());
        };
        let version = self.git_version.trim_start_matches('v');
        let talos = talos.to_string();
        let talos = talos.trim_start_matches('v');
        let core = (self.major, self.minor, self.patch);
        if core < (1, oldest, 0) {
            return Err(format!(
                "version of Kubernetes {version} is too old to be used with Talos {talos}"
            ));
        }
        if core >= (1, newest, 99) {
            return Err(format!(
                "version of Kubernetes {version} is too new to be used with Talos {talos}"
            ));
        }
        Ok(())
    }

    /// kube-apiserver's answer to `GET /version` for this release on
    /// `arch`. Releases without a build on record report the build
    /// defaults of `k8s.io/component-base/version` for the commit and date
    /// and the Go minor the release line is built with.
    pub fn info(&self, arch: Architecture) -> Value {
        let (commit, date, go) = BUILDS
            .iter()
            .find(|(v, ..)| *v == self.git_version)
            .map_or_else(
                || {
                    (
                        "0000000000000000000000000000000000000000",
                        "1970-01-01T00:00:00Z",
                        go_minor(self.minor),
                    )
                },
                |(_, commit, date, go)| (*commit, *date, *go),
            );
        let (major, minor) = (self.major.to_string(), self.minor.to_string());
        let mut info = json!({"major": major, "minor": minor});
        if (self.major, self.minor) >= (1, 33) {
            // Compatibility versions (KEP-4330) are reported from 1.33 on.
            info["emulationMajor"] = json!(major);
            info["emulationMinor"] = json!(minor);
            info["minCompatibilityMajor"] = json!(major);
            info["minCompatibilityMinor"] = json!(self.minor.saturating_sub(1).to_string());
        }
        let platform = match arch {
            Architecture::X86 => "linux/amd64",
            Architecture::Arm => "linux/arm64",
        };
        for (name, value) in [
            ("gitVersion", self.git_version.as_str()),
            ("gitCommit", commit),
            ("gitTreeState", "clean"),
            ("buildDate", date),
            ("goVersion", go),
            ("compiler", "gc"),
            ("platform", platform),
        ] {
            info[name] = json!(value);
        }
        info
    }
}

/// The Go release a Kubernetes minor is built with (its latest patch
/// line; the exact patch varies by Kubernetes patch release).
fn go_minor(minor: u32) -> &'static str {
    match minor {
        ..=29 => "go1.21.13",
        30 | 31 => "go1.22.12",
        32 => "go1.23.12",
        33 | 34 => "go1.24.11",
        _ => "go1.25.5",
    }
}
