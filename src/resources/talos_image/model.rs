//! The resource's attributes: a Terraform config, plan or state value
//! decoded once per request into typed fields (null and unknown kept
//! apart), checked with the attribute at fault, turned into the typed
//! [`ImageSpec`] when wholly known, and encoded back. The one place the
//! resource's attributes are read and written by name.

use std::collections::BTreeMap;
use std::time::Duration;

use super::diagnostics::to_diagnostic;
use super::field::{Field, Wire};
use crate::duration;
use crate::hcloud::models::Labels;
use crate::snapshot::SnapshotError;
use crate::snapshot::find::Identified;
use crate::snapshot::spec::{
    self, DEFAULT_CREATE_TIMEOUT, DEFAULT_DELETE_TIMEOUT, ImageSpec, default_server_type,
};
use crate::talos::image::{self, DEFAULT_FACTORY_URL, Schematic};
use crate::talos::release::{self, TalosVersion};
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

/// The `timeouts` block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeouts {
    pub create: Field<String>,
    pub delete: Field<String>,
}

impl Wire for Timeouts {
    fn decode(value: &Value) -> Option<Self> {
        value.as_map()?;
        Some(Self {
            create: Field::decode(value.get("create")),
            delete: Field::decode(value.get("delete")),
        })
    }

    fn encode(&self) -> Value {
        Value::object([
            ("create", self.create.encode()),
            ("delete", self.delete.encode()),
        ])
    }
}

pub type Strings = Vec<Field<String>>;
pub type StringMap = BTreeMap<String, Field<String>>;

/// Every attribute of `hct_talos_image`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attributes {
    pub talos_version: Field<String>,
    pub architecture: Field<String>,
    pub extensions: Field<Strings>,
    pub extra_kernel_args: Field<Strings>,
    pub location: Field<String>,
    pub server_type: Field<String>,
    pub labels: Field<StringMap>,
    pub image_factory_url: Field<String>,
    pub keep_on_destroy: Field<bool>,
    pub id: Field<String>,
    pub schematic_id: Field<String>,
    pub image_url: Field<String>,
    pub installer_image: Field<String>,
    pub timeouts: Field<Timeouts>,
}

impl Attributes {
    pub fn decode(value: &Value) -> Self {
        Self {
            talos_version: Field::decode(value.get("talos_version")),
            architecture: Field::decode(value.get("architecture")),
            extensions: Field::decode(value.get("extensions")),
            extra_kernel_args: Field::decode(value.get("extra_kernel_args")),
            location: Field::decode(value.get("location")),
            server_type: Field::decode(value.get("server_type")),
            labels: Field::decode(value.get("labels")),
            image_factory_url: Field::decode(value.get("image_factory_url")),
            keep_on_destroy: Field::decode(value.get("keep_on_destroy")),
            id: Field::decode(value.get("id")),
            schematic_id: Field::decode(value.get("schematic_id")),
            image_url: Field::decode(value.get("image_url")),
            installer_image: Field::decode(value.get("installer_image")),
            timeouts: Field::decode(value.get("timeouts")),
        }
    }

    pub fn encode(&self) -> Value {
        Value::object([
            ("talos_version", self.talos_version.encode()),
            ("architecture", self.architecture.encode()),
            ("extensions", self.extensions.encode()),
            ("extra_kernel_args", self.extra_kernel_args.encode()),
            ("location", self.location.encode()),
            ("server_type", self.server_type.encode()),
            ("labels", self.labels.encode()),
            ("image_factory_url", self.image_factory_url.encode()),
            ("keep_on_destroy", self.keep_on_destroy.encode()),
            ("id", self.id.encode()),
            ("schematic_id", self.schematic_id.encode()),
            ("image_url", self.image_url.encode()),
            ("installer_image", self.installer_image.encode()),
            ("timeouts", self.timeouts.encode()),
        ])
    }

    /// The state of an imported snapshot.
    pub fn imported(found: &Identified) -> Self {
        let url = image::image_url(
            DEFAULT_FACTORY_URL,
            &found.schematic_id,
            &found.version,
            &found.architecture,
        );
        let installer =
            image::installer_image(DEFAULT_FACTORY_URL, &found.schematic_id, &found.version);
        Self {
            talos_version: Field::Known(found.version.to_string()),
            architecture: Field::Known(found.architecture.clone()),
            labels: if found.extra_labels.is_empty() {
                Field::Null
            } else {
                Field::Known(string_map(&found.extra_labels))
            },
            image_factory_url: Field::Known(DEFAULT_FACTORY_URL.to_string()),
            keep_on_destroy: Field::Known(false),
            id: Field::Known(found.id.to_string()),
            schematic_id: Field::Known(found.schematic_id.clone()),
            image_url: Field::Known(url),
            installer_image: Field::Known(installer),
            ..Self::default()
        }
    }

    /// The snapshot's ID in the state.
    pub fn image_id(&self) -> Option<i64> {
        self.id.known().and_then(|id| id.parse().ok())
    }

    pub fn with_id(&self, id: i64) -> Self {
        Self {
            id: Field::Known(id.to_string()),
            ..self.clone()
        }
    }

    pub fn keep_on_destroy(&self) -> bool {
        self.keep_on_destroy.known() == Some(&true)
    }

    pub fn delete_timeout(&self) -> Duration {
        timeout(&self.timeouts, |t| &t.delete, DEFAULT_DELETE_TIMEOUT)
    }

    /// The user's labels as the snapshot has them now (drift shows in
    /// plans); left null when neither the state nor the snapshot has any.
    pub fn refreshed(mut self, labels: &Labels) -> Self {
        if !self.labels.is_null() || !labels.is_empty() {
            self.labels = Field::Known(string_map(labels));
        }
        self
    }

    /// What plan fills in: the builder type of the architecture, the
    /// default factory, `keep_on_destroy = false`.
    pub fn with_defaults(mut self) -> Self {
        if self.server_type.is_null() {
            self.server_type = match self.architecture.known() {
                Some(arch) => Field::Known(default_server_type(arch).to_string()),
                None => Field::Unknown,
            };
        }
        if self.image_factory_url.is_null() {
            self.image_factory_url = Field::Known(DEFAULT_FACTORY_URL.to_string());
        }
        if self.keep_on_destroy.is_null() {
            self.keep_on_destroy = Field::Known(false);
        }
        self
    }

    /// `schematic_id`, `image_url` and `installer_image`, computed offline
    /// when their inputs are known (unknown otherwise).
    pub fn fill_offline(&mut self) {
        let (id, url, installer) = match self.offline() {
            Some((id, url, installer)) => {
                (Field::Known(id), Field::Known(url), Field::Known(installer))
            }
            None => (Field::Unknown, Field::Unknown, Field::Unknown),
        };
        self.schematic_id = id;
        self.image_url = url;
        self.installer_image = installer;
    }

    fn offline(&self) -> Option<(String, String, String)> {
        let version = TalosVersion::parse(self.talos_version.known()?).ok()?;
        let architecture = self.architecture.known()?;
        image::hetzner_architecture(architecture)?;
        let factory = self.image_factory_url.known()?;
        let id = self.schematic()?.id();
        let url = image::image_url(factory, &id, &version, architecture);
        let installer = image::installer_image(factory, &id, &version);
        Some((id, url, installer))
    }

    /// The schematic, when extensions and kernel arguments are known.
    fn schematic(&self) -> Option<Schematic> {
        Some(Schematic {
            extra_kernel_args: strings(&self.extra_kernel_args)?,
            extensions: strings(&self.extensions)?,
        })
    }

    /// The image of a wholly known, valid configuration (defaults filled in
    /// here again, so config values work too).
    pub fn spec(&self) -> Result<ImageSpec, Diagnostics> {
        let diagnostics = self.validate();
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
        let version = self
            .talos_version
            .known()
            .and_then(|t| TalosVersion::parse(t).ok())
            .ok_or_else(|| missing("talos_version"))?;
        let architecture = self
            .architecture
            .known()
            .ok_or_else(|| missing("architecture"))?;
        let schematic = self.schematic().ok_or_else(|| missing("extensions"))?;
        let location = self.location.known().ok_or_else(|| missing("location"))?;
        let mut spec = ImageSpec::new(version, architecture, schematic, location)
            .with_extra_labels(known_strings(&self.labels))
            .with_create_timeout(timeout(
                &self.timeouts,
                |t| &t.create,
                DEFAULT_CREATE_TIMEOUT,
            ));
        if let Some(factory) = self.image_factory_url.known() {
            spec = spec.with_factory(factory);
        }
        if let Some(server_type) = self.server_type.known() {
            spec = spec.with_server_type(server_type);
        }
        Ok(spec)
    }

    /// Checks what is known of a configuration, with the attribute at fault.
    pub fn validate(&self) -> Diagnostics {
        let mut diagnostics = Diagnostics::new();
        let mut check = |path: AttrPath, result: Result<(), SnapshotError>| {
            if let Err(e) = result {
                diagnostics.push(to_diagnostic(&e).at(path));
            }
        };
        if let Some(text) = self.talos_version.known() {
            check(
                AttrPath::attr("talos_version"),
                spec::check_version(text).map(drop),
            );
        }
        let architecture = self.architecture.known().map(String::as_str);
        if let Some(architecture) = architecture {
            check(
                AttrPath::attr("architecture"),
                spec::check_architecture(architecture),
            );
        }
        if let Some(location) = self.location.known() {
            check(AttrPath::attr("location"), spec::check_location(location));
        }
        if let Some(server_type) = self.server_type.known() {
            check(
                AttrPath::attr("server_type"),
                spec::check_server_type(server_type, architecture),
            );
        }
        type Check = fn(&str) -> Result<(), SnapshotError>;
        let lists: [(&str, &Field<Strings>, Check); 2] = [
            ("extensions", &self.extensions, spec::check_extension),
            (
                "extra_kernel_args",
                &self.extra_kernel_args,
                spec::check_kernel_arg,
            ),
        ];
        for (attribute, list, check_entry) in lists {
            for (index, item) in list.known().into_iter().flatten().enumerate() {
                if let Some(text) = item.known() {
                    check(
                        AttrPath::attr(attribute).index(index as i64),
                        check_entry(text),
                    );
                }
            }
        }
        if let Some(factory) = self.image_factory_url.known() {
            check(
                AttrPath::attr("image_factory_url"),
                spec::check_factory(factory),
            );
        }
        for (key, value) in self.labels.known().into_iter().flatten() {
            check(
                AttrPath::attr("labels").key(key.clone()),
                spec::check_label(key, value.known().map(String::as_str)),
            );
        }
        if let Some(timeouts) = self.timeouts.known() {
            for (name, value) in [("create", &timeouts.create), ("delete", &timeouts.delete)] {
                if let Some(text) = value.known()
                    && let Err(why) = duration::parse(text)
                {
                    diagnostics.push(
                        Diagnostic::error("Invalid timeout", why)
                            .at(AttrPath::attr("timeouts").attr_of(name)),
                    );
                }
            }
        }
        diagnostics
    }

    /// Release warnings for a known version.
    pub fn warnings(&self) -> Diagnostics {
        let mut diagnostics = Diagnostics::new();
        if let Some(version) = self
            .talos_version
            .known()
            .and_then(|t| TalosVersion::parse(t).ok())
        {
            diagnostics.extend(
                release::known_problem(&version).map(|w| w.at(AttrPath::attr("talos_version"))),
            );
        }
        diagnostics
    }
}

/// What forces replacing the snapshot going from `prior` to `planned`: the
/// release, the architecture, the factory, or a new schematic (blamed on
/// the list that changed, or on both).
pub fn replacements(prior: &Attributes, planned: &Attributes) -> Vec<AttrPath> {
    fn differs<T: PartialEq>(new: &Field<T>, old: &Field<T>) -> bool {
        new.is_unknown() || new != old
    }
    let mut replace = Vec::new();
    // The release, not its spelling (`v1.12.6` and `1.12.6` are one).
    let release = |f: &Field<String>| match f {
        Field::Known(text) => {
            TalosVersion::parse(text).map_or_else(|_| text.clone(), |v| v.to_string())
        }
        _ => String::new(),
    };
    if planned.talos_version.is_unknown()
        || release(&planned.talos_version) != release(&prior.talos_version)
        || planned.talos_version.is_null() != prior.talos_version.is_null()
    {
        replace.push(AttrPath::attr("talos_version"));
    }
    if differs(&planned.architecture, &prior.architecture) {
        replace.push(AttrPath::attr("architecture"));
    }
    let factory = |f: &Field<String>| f.known().map(|f| f.trim_end_matches('/').to_string());
    if planned.image_factory_url.is_unknown()
        || factory(&planned.image_factory_url) != factory(&prior.image_factory_url)
    {
        replace.push(AttrPath::attr("image_factory_url"));
    }
    if differs(&planned.schematic_id, &prior.schematic_id) {
        let mut changed = Vec::new();
        if differs(&planned.extensions, &prior.extensions) {
            changed.push("extensions");
        }
        if differs(&planned.extra_kernel_args, &prior.extra_kernel_args) {
            changed.push("extra_kernel_args");
        }
        if changed.is_empty() {
            changed = vec!["extensions", "extra_kernel_args"];
        }
        replace.extend(changed.into_iter().map(AttrPath::attr));
    }
    replace
}

/// A known list of strings (null is empty); None when anything is unknown.
fn strings(list: &Field<Strings>) -> Option<Vec<String>> {
    match list {
        Field::Null => Some(Vec::new()),
        Field::Unknown => None,
        Field::Known(items) => items.iter().map(|i| i.known().cloned()).collect(),
    }
}

/// The known entries of a map of strings.
fn known_strings(map: &Field<StringMap>) -> Labels {
    map.known()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.known().map(|v| (k.clone(), v.clone())))
        .collect()
}

fn string_map(labels: &Labels) -> StringMap {
    labels
        .iter()
        .map(|(k, v)| (k.clone(), Field::Known(v.clone())))
        .collect()
}

fn timeout(
    timeouts: &Field<Timeouts>,
    which: impl Fn(&Timeouts) -> &Field<String>,
    default: Duration,
) -> Duration {
    timeouts
        .known()
        .and_then(|t| which(t).known())
        .and_then(|t| duration::parse(t).ok())
        .unwrap_or(default)
}

#[cfg(test)]
mod tests;
