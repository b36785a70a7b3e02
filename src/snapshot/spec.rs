//! What to build: the typed image spec (release, architecture, schematic,
//! where the builder runs, the factory, the labels and description the
//! snapshot gets), its defaults, and the rules each part obeys, checked
//! before anything is built.

use std::time::Duration;

use url::Url;

use super::error::SnapshotError;
use crate::hcloud::models::Labels;
use crate::talos::image::{self, DEFAULT_FACTORY_URL, Schematic};
use crate::talos::release::TalosVersion;

/// Labels hct sets on every snapshot it builds; users cannot set them.
pub const RESERVED_LABELS: [&str; 5] = ["os", "type", "version", "arch", "schematic"];
pub const DEFAULT_CREATE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
pub const DEFAULT_DELETE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The builder server type when none is given: the smallest current type
/// of the architecture.
pub fn default_server_type(architecture: &str) -> &'static str {
    if architecture == "arm64" {
        "cax11"
    } else {
        "cx23"
    }
}

/// A wholly known, valid image: what to build and how to label it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSpec {
    pub version: TalosVersion,
    pub architecture: String,
    pub schematic: Schematic,
    pub schematic_id: String,
    /// The Image Factory's base URL, without a trailing slash.
    pub factory: String,
    /// Where the temporary builder runs.
    pub location: String,
    pub server_type: String,
    /// The user's own labels (without the reserved ones).
    pub extra_labels: Labels,
    /// How long finding (waiting for another build) or building may take.
    pub create_timeout: Duration,
}

impl ImageSpec {
    /// The image of `schematic` for a release and architecture, built in
    /// `location`, with the defaults: the default factory and builder type
    /// of the architecture, no extra labels, the default create timeout.
    pub fn new(
        version: TalosVersion,
        architecture: &str,
        schematic: Schematic,
        location: &str,
    ) -> Self {
        Self {
            version,
            schematic_id: schematic.id(),
            schematic,
            architecture: architecture.to_string(),
            factory: DEFAULT_FACTORY_URL.to_string(),
            location: location.to_string(),
            server_type: default_server_type(architecture).to_string(),
            extra_labels: Labels::new(),
            create_timeout: DEFAULT_CREATE_TIMEOUT,
        }
    }

    pub fn with_factory(mut self, factory: &str) -> Self {
        self.factory = factory.trim_end_matches('/').to_string();
        self
    }

    pub fn with_server_type(mut self, server_type: &str) -> Self {
        self.server_type = server_type.to_string();
        self
    }

    pub fn with_extra_labels(mut self, labels: Labels) -> Self {
        self.extra_labels = labels;
        self
    }

    pub fn with_create_timeout(mut self, timeout: Duration) -> Self {
        self.create_timeout = timeout;
        self
    }

    pub fn image_url(&self) -> String {
        image::image_url(
            &self.factory,
            &self.schematic_id,
            &self.version,
            &self.architecture,
        )
    }

    pub fn installer_image(&self) -> String {
        image::installer_image(&self.factory, &self.schematic_id, &self.version)
    }

    /// The snapshot's labels: the user's, then the identifying ones.
    pub fn labels(&self) -> Labels {
        let mut labels = self.extra_labels.clone();
        labels.insert("os".into(), "talos".into());
        labels.insert("type".into(), "infra".into());
        labels.insert("version".into(), self.version.to_string());
        labels.insert("arch".into(), self.architecture.clone());
        labels.insert(
            "schematic".into(),
            image::schematic_label(&self.schematic_id).to_string(),
        );
        labels
    }

    /// Names the release, architecture and the whole schematic ID (the
    /// label only holds its first half).
    pub fn description(&self) -> String {
        format!(
            "Talos Linux {} ({}), schematic {}",
            self.version, self.architecture, self.schematic_id
        )
    }
}

/// A snapshot's labels without the ones hct sets: the user's own.
pub fn user_labels(labels: &Labels) -> Labels {
    labels
        .iter()
        .filter(|(k, _)| !RESERVED_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

pub fn check_version(text: &str) -> Result<TalosVersion, SnapshotError> {
    TalosVersion::parse(text).map_err(SnapshotError::InvalidVersion)
}

pub fn check_architecture(architecture: &str) -> Result<(), SnapshotError> {
    match image::hetzner_architecture(architecture) {
        Some(_) => Ok(()),
        None => Err(SnapshotError::InvalidArchitecture {
            architecture: architecture.to_string(),
        }),
    }
}

pub fn check_location(location: &str) -> Result<(), SnapshotError> {
    if location.is_empty() || !location.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(SnapshotError::InvalidLocation {
            location: location.to_string(),
        });
    }
    Ok(())
}

/// A server type name, of the image's architecture when that is known.
pub fn check_server_type(
    server_type: &str,
    architecture: Option<&str>,
) -> Result<(), SnapshotError> {
    let is_arm = server_type.starts_with("cax");
    if server_type.is_empty()
        || !server_type
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(SnapshotError::InvalidServerType {
            server_type: server_type.to_string(),
        });
    }
    if let Some(architecture) = architecture
        && ((architecture == "arm64") != is_arm)
    {
        return Err(SnapshotError::ServerTypeArchitecture {
            server_type: server_type.to_string(),
            architecture: architecture.to_string(),
            is_arm,
            suggested: default_server_type(architecture),
        });
    }
    Ok(())
}

/// An entry of the schematic's extensions.
pub fn check_extension(text: &str) -> Result<(), SnapshotError> {
    check_schematic_entry(
        text,
        "official extension such as \"siderolabs/qemu-guest-agent\"",
    )
}

/// An entry of the schematic's extra kernel arguments.
pub fn check_kernel_arg(text: &str) -> Result<(), SnapshotError> {
    check_schematic_entry(text, "kernel argument such as \"console=ttyS0\"")
}

fn check_schematic_entry(text: &str, what: &'static str) -> Result<(), SnapshotError> {
    if text.trim().is_empty() || text.chars().any(char::is_control) {
        return Err(SnapshotError::InvalidSchematicEntry {
            text: text.to_string(),
            what,
        });
    }
    Ok(())
}

/// The factory URL goes into a shell command on the builder: an http(s)
/// URL with a host, no query, no fragment, and nothing a shell would read.
pub fn check_factory(text: &str) -> Result<(), SnapshotError> {
    factory_problem(text).map_err(|why| SnapshotError::InvalidFactory {
        factory: text.to_string(),
        why,
    })
}

fn factory_problem(text: &str) -> Result<(), String> {
    let url = Url::parse(text).map_err(|_| "is not a URL".to_string())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("is not an http or https URL with a host".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("has a query or fragment".into());
    }
    if text
        .chars()
        .any(|c| c.is_whitespace() || "'\"`$\\;|&<>(){}".contains(c))
    {
        return Err("contains characters that do not belong in a URL".into());
    }
    Ok(())
}

/// A user label: not a reserved key, and valid on Hetzner. Hetzner's rules:
/// keys are an optional DNS-subdomain prefix and a name; names and values at
/// most 63 characters of `[a-zA-Z0-9._-]`, starting and ending alphanumeric
/// (values may be empty). With `value` None (not known yet) only the
/// reserved keys are checked.
pub fn check_label(key: &str, value: Option<&str>) -> Result<(), SnapshotError> {
    if RESERVED_LABELS.contains(&key) {
        return Err(SnapshotError::ReservedLabel {
            key: key.to_string(),
            reserved: &RESERVED_LABELS,
        });
    }
    let Some(value) = value else {
        return Ok(());
    };
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    let name = key.rsplit_once('/').map_or(key, |(_, name)| name);
    if !name_ok(name) {
        return Err(SnapshotError::InvalidLabelKey {
            key: key.to_string(),
        });
    }
    if !(value.is_empty() || name_ok(value)) {
        return Err(SnapshotError::InvalidLabelValue {
            key: key.to_string(),
            value: value.to_string(),
        });
    }
    Ok(())
}
