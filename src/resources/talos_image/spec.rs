//! The resource's configuration, checked and with its defaults: what to
//! build, where, and how the snapshot is labelled and described.

use std::time::Duration;

use url::Url;

use crate::duration;
use crate::hcloud::models::Labels;
use crate::talos::image::{self, DEFAULT_FACTORY_URL, Schematic};
use crate::talos::release::{self, TalosVersion};
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

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

/// A wholly known, valid configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSpec {
    pub version: TalosVersion,
    pub architecture: String,
    pub schematic: Schematic,
    pub schematic_id: String,
    pub factory: String,
    pub location: String,
    pub server_type: String,
    /// The user's own labels (without the reserved ones).
    pub extra_labels: Labels,
    pub keep_on_destroy: bool,
    pub create_timeout: Duration,
    pub delete_timeout: Duration,
}

impl ImageSpec {
    /// Reads a planned or state value (defaults already filled in by plan,
    /// but filled here again so config values work too).
    pub fn from_value(value: &Value) -> Result<Self, Diagnostics> {
        let diagnostics = validate(value);
        if diagnostics.has_errors() {
            return Err(diagnostics);
        }
        let missing = |name: &str| {
            Diagnostics::from(
                Diagnostic::error(
                    "Value not known",
                    format!("{name} must be known to build the Talos image."),
                )
                .at(AttrPath::attr(name)),
            )
        };
        let version = value
            .get("talos_version")
            .as_str()
            .and_then(|t| TalosVersion::parse(t).ok())
            .ok_or_else(|| missing("talos_version"))?;
        let architecture = value
            .get("architecture")
            .as_str()
            .ok_or_else(|| missing("architecture"))?
            .to_string();
        let schematic = schematic(value).ok_or_else(|| missing("extensions"))?;
        let factory = value
            .get("image_factory_url")
            .as_str()
            .unwrap_or(DEFAULT_FACTORY_URL)
            .trim_end_matches('/')
            .to_string();
        let location = value
            .get("location")
            .as_str()
            .ok_or_else(|| missing("location"))?
            .to_string();
        let server_type = value
            .get("server_type")
            .as_str()
            .unwrap_or(default_server_type(&architecture))
            .to_string();
        let extra_labels = strings_map(value.get("labels"));
        let timeouts = value.get("timeouts");
        let timeout = |name: &str, default: Duration| {
            timeouts
                .get(name)
                .as_str()
                .and_then(|t| duration::parse(t).ok())
                .unwrap_or(default)
        };
        Ok(Self {
            version,
            schematic_id: schematic.id(),
            schematic,
            architecture,
            factory,
            location,
            server_type,
            extra_labels,
            keep_on_destroy: value.get("keep_on_destroy").as_bool().unwrap_or(false),
            create_timeout: timeout("create", DEFAULT_CREATE_TIMEOUT),
            delete_timeout: timeout("delete", DEFAULT_DELETE_TIMEOUT),
        })
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

/// The schematic of a configuration, when extensions and kernel arguments
/// are known.
pub fn schematic(value: &Value) -> Option<Schematic> {
    Some(Schematic {
        extra_kernel_args: strings(value.get("extra_kernel_args"))?,
        extensions: strings(value.get("extensions"))?,
    })
}

/// A known list of strings (null is empty); None when anything is unknown.
fn strings(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Null => Some(Vec::new()),
        Value::List(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => None,
    }
}

pub fn strings_map(value: &Value) -> Labels {
    value
        .as_map()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks what is known of a configuration, with the attribute at fault.
pub fn validate(config: &Value) -> Diagnostics {
    let mut diagnostics = Diagnostics::new();
    let mut error = |attribute: AttrPath, summary: &str, detail: String| {
        diagnostics.push(Diagnostic::error(summary, detail).at(attribute));
    };
    if let Some(text) = config.get("talos_version").as_str()
        && let Err(why) = TalosVersion::parse(text)
    {
        error(
            AttrPath::attr("talos_version"),
            "Invalid Talos version",
            why.to_string(),
        );
    }
    let architecture = config.get("architecture").as_str();
    if let Some(architecture) = architecture
        && image::hetzner_architecture(architecture).is_none()
    {
        error(
            AttrPath::attr("architecture"),
            "Invalid architecture",
            format!("architecture = {architecture:?}: use \"amd64\" or \"arm64\"."),
        );
    }
    if let Some(location) = config.get("location").as_str()
        && (location.is_empty() || !location.chars().all(|c| c.is_ascii_alphanumeric()))
    {
        error(
            AttrPath::attr("location"),
            "Invalid location",
            format!(
                "location = {location:?} is not a Hetzner location name. Use one such as \"nbg1\", \
                 \"fsn1\" or \"hel1\" (where the temporary builder server runs; the snapshot \
                 can be used in every location)."
            ),
        );
    }
    if let Some(server_type) = config.get("server_type").as_str() {
        let is_arm = server_type.starts_with("cax");
        if server_type.is_empty()
            || !server_type
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            error(
                AttrPath::attr("server_type"),
                "Invalid server type",
                format!(
                    "server_type = {server_type:?} is not a Hetzner server type name such as \"cx23\"."
                ),
            );
        } else if let Some(architecture) = architecture
            && ((architecture == "arm64") != is_arm)
        {
            error(
                AttrPath::attr("server_type"),
                "Builder server type of the wrong architecture",
                format!(
                    "server_type = {server_type:?} is {}, but architecture = {architecture:?}: the \
                     image must be written by a server of its own architecture, or the snapshot \
                     is of the wrong one. Use e.g. \"{}\", or leave server_type out.",
                    if is_arm {
                        "an Arm (Ampere) type"
                    } else {
                        "an x86 type"
                    },
                    default_server_type(architecture)
                ),
            );
        }
    }
    for (attribute, what) in [
        (
            "extensions",
            "official extension such as \"siderolabs/qemu-guest-agent\"",
        ),
        (
            "extra_kernel_args",
            "kernel argument such as \"console=ttyS0\"",
        ),
    ] {
        if let Some(items) = config.get(attribute).as_list() {
            for (index, item) in items.iter().enumerate() {
                if let Some(text) = item.as_str()
                    && (text.trim().is_empty() || text.chars().any(char::is_control))
                {
                    error(
                        AttrPath::attr(attribute).index(index as i64),
                        "Invalid schematic entry",
                        format!("{text:?} is not an {what}."),
                    );
                }
            }
        }
    }
    if let Some(factory) = config.get("image_factory_url").as_str()
        && let Err(why) = check_factory(factory)
    {
        error(
            AttrPath::attr("image_factory_url"),
            "Invalid Image Factory URL",
            format!(
                "image_factory_url = {factory:?} {why}. Use the factory's base URL, e.g. \
                 \"{DEFAULT_FACTORY_URL}\"."
            ),
        );
    }
    if let Some(labels) = config.get("labels").as_map() {
        for (key, value) in labels {
            let path = AttrPath::attr("labels").key(key.clone());
            if RESERVED_LABELS.contains(&key.as_str()) {
                error(
                    path,
                    "Reserved label",
                    format!(
                        "hct sets the label {key:?} itself ({}) to find the snapshot again; \
                         choose another key.",
                        RESERVED_LABELS.join(", ")
                    ),
                );
            } else if let Some(value) = value.as_str()
                && let Err(why) = check_label(key, value)
            {
                error(path, "Invalid label", why);
            }
        }
    }
    if let Some(timeouts) = config.get("timeouts").as_map() {
        for (name, value) in timeouts {
            if let Some(text) = value.as_str()
                && let Err(why) = duration::parse(text)
            {
                error(
                    AttrPath::attr("timeouts").attr_of(name.clone()),
                    "Invalid timeout",
                    why,
                );
            }
        }
    }
    diagnostics
}

/// Release warnings for a known version.
pub fn warnings(config: &Value) -> Diagnostics {
    let mut diagnostics = Diagnostics::new();
    if let Some(version) = config
        .get("talos_version")
        .as_str()
        .and_then(|t| TalosVersion::parse(t).ok())
    {
        diagnostics.extend(
            release::known_problem(&version).map(|w| w.at(AttrPath::attr("talos_version"))),
        );
    }
    diagnostics
}

/// The factory URL goes into a shell command on the builder: an http(s)
/// URL with a host, no query, no fragment, and nothing a shell would read.
fn check_factory(text: &str) -> Result<(), String> {
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

/// Hetzner's label rules: keys are an optional DNS-subdomain prefix and a
/// name; names and values at most 63 characters of `[a-zA-Z0-9._-]`, starting
/// and ending alphanumeric (values may be empty).
fn check_label(key: &str, value: &str) -> Result<(), String> {
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
        return Err(format!(
            "label key {key:?} is not valid on Hetzner: at most 63 letters, digits, '-', '_' or \
             '.', starting and ending with a letter or digit (optionally after a \"prefix/\")."
        ));
    }
    if !(value.is_empty() || name_ok(value)) {
        return Err(format!(
            "label value {value:?} of {key:?} is not valid on Hetzner: at most 63 letters, \
             digits, '-', '_' or '.', starting and ending with a letter or digit."
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, Value)]) -> Value {
        let mut all = vec![
            ("talos_version", Value::from("v1.12.6")),
            ("architecture", Value::from("amd64")),
            ("location", Value::from("nbg1")),
        ];
        for (name, value) in pairs {
            all.retain(|(n, _)| n != name);
            all.push((name, value.clone()));
        }
        Value::object(all)
    }

    #[test]
    fn defaults_labels_and_description() {
        let spec = ImageSpec::from_value(&config(&[(
            "extensions",
            Value::strings(["siderolabs/qemu-guest-agent"]),
        )]))
        .unwrap();
        let id = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";
        assert_eq!(spec.schematic_id, id);
        assert_eq!(spec.server_type, "cx23");
        assert_eq!(spec.factory, DEFAULT_FACTORY_URL);
        assert_eq!(spec.create_timeout, DEFAULT_CREATE_TIMEOUT);
        assert_eq!(
            spec.image_url(),
            format!("https://factory.talos.dev/image/{id}/v1.12.6/hcloud-amd64.raw.xz")
        );
        let labels = spec.labels();
        assert_eq!(labels["schematic"], &id[..32]);
        assert_eq!(labels["os"], "talos");
        assert_eq!(labels["type"], "infra");
        assert_eq!(
            image::schematic_in_description(&spec.description()),
            Some(id)
        );
        let arm =
            ImageSpec::from_value(&config(&[("architecture", Value::from("arm64"))])).unwrap();
        assert_eq!(arm.server_type, "cax11");
    }

    #[test]
    fn errors_point_at_their_attribute() {
        let cases = [
            (
                "talos_version",
                Value::from("1.12"),
                AttrPath::attr("talos_version"),
            ),
            (
                "architecture",
                Value::from("x86"),
                AttrPath::attr("architecture"),
            ),
            ("location", Value::from(""), AttrPath::attr("location")),
            (
                "server_type",
                Value::from("cax11"),
                AttrPath::attr("server_type"),
            ),
            (
                "image_factory_url",
                Value::from("https://f.example/'; rm -rf /"),
                AttrPath::attr("image_factory_url"),
            ),
            (
                "labels",
                Value::object([("os", Value::from("linux"))]),
                AttrPath::attr("labels").key("os"),
            ),
            (
                "labels",
                Value::object([("team", Value::from("a b"))]),
                AttrPath::attr("labels").key("team"),
            ),
            (
                "extensions",
                Value::strings(["ok", " "]),
                AttrPath::attr("extensions").index(1),
            ),
            (
                "timeouts",
                Value::object([("create", Value::from("soon"))]),
                AttrPath::attr("timeouts").attr_of("create"),
            ),
        ];
        for (attribute, value, path) in cases {
            let diagnostics = validate(&config(&[(attribute, value.clone())]));
            let first = diagnostics
                .iter()
                .next()
                .unwrap_or_else(|| panic!("{attribute} = {value:?} passed"));
            assert_eq!(first.path.as_ref(), Some(&path), "{attribute}");
        }
        assert!(validate(&config(&[("server_type", Value::from("cx33"))])).is_empty());
        assert!(validate(&config(&[("location", Value::Unknown)])).is_empty());
    }

    #[test]
    fn known_problem_releases_warn() {
        let warned = warnings(&config(&[("talos_version", Value::from("v1.11.3"))]));
        assert!(
            warned
                .iter()
                .any(|d| !d.is_error() && d.detail.contains("containerd"))
        );
        assert!(warnings(&config(&[])).is_empty());
    }
}
