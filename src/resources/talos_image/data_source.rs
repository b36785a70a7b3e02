//! `hct_talos_image` (data source): finds the newest Talos snapshot hct
//! built (or a matching one) for a release and architecture.

use async_trait::async_trait;

use crate::provider::{Context, DataSource};
use crate::snapshot;
use crate::talos::image::{self, DEFAULT_FACTORY_URL};
use crate::talos::release::{self, TalosVersion};
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_talos_image";

pub struct TalosImageDataSource;

#[async_trait]
impl DataSource for TalosImageDataSource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        Schema::new(
            0,
            "Finds a Talos snapshot in the Hetzner project: the newest available snapshot \
             labelled `os=talos` with the release and architecture asked for (and the schematic, \
             when given), as built by the `hct_talos_image` resource. Fails when there is none.",
        )
        .attribute(Attribute::required("talos_version", Type::String).description(
            "The Talos release, e.g. `v1.12.6`. Releases with known problems get a warning.",
        ))
        .attribute(
            Attribute::required("architecture", Type::String)
                .description("`amd64` (x86 server types such as cx23) or `arm64` (cax11…)."),
        )
        .attribute(Attribute::optional_computed("schematic_id", Type::String).description(
            "Only snapshots of this Image Factory schematic (64 hex digits). When left out, the \
             newest snapshot of any schematic, and this is its schematic.",
        ))
        .attribute(Attribute::computed("id", Type::String).description("The snapshot's image ID."))
        .attribute(Attribute::computed("description", Type::String).description("The snapshot's description."))
        .attribute(Attribute::computed("created", Type::String).description("When the snapshot was made (RFC 3339)."))
        .attribute(Attribute::computed("image_url", Type::String).description(
            "Where the Image Factory serves the raw Hetzner image of this schematic and release.",
        ))
        .attribute(Attribute::computed("installer_image", Type::String).description(
            "The factory installer image of this schematic and release (for installs and upgrades).",
        ))
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let mut diagnostics = Diagnostics::new();
        if let Some(text) = config.get("talos_version").as_str() {
            match TalosVersion::parse(text) {
                Ok(version) => diagnostics.extend(
                    release::known_problem(&version).map(|w| w.at(AttrPath::attr("talos_version"))),
                ),
                Err(why) => diagnostics.push(
                    Diagnostic::error("Invalid Talos version", why.to_string())
                        .at(AttrPath::attr("talos_version")),
                ),
            }
        }
        if let Some(architecture) = config.get("architecture").as_str()
            && image::hetzner_architecture(architecture).is_none()
        {
            diagnostics.push(
                Diagnostic::error(
                    "Invalid architecture",
                    format!("architecture = {architecture:?}: use \"amd64\" or \"arm64\"."),
                )
                .at(AttrPath::attr("architecture")),
            );
        }
        if let Some(id) = config.get("schematic_id").as_str()
            && !(id.len() == 64
                && id
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)))
        {
            diagnostics.push(
                Diagnostic::error(
                    "Invalid schematic ID",
                    format!(
                        "schematic_id = {id:?} is not an Image Factory schematic ID (64 lowercase hex \
                         digits). Take it from the hct_talos_image resource's schematic_id."
                    ),
                )
                .at(AttrPath::attr("schematic_id")),
            );
        }
        diagnostics
    }

    async fn read(&self, ctx: &Context, config: &Value) -> (Option<Value>, Diagnostics) {
        let mut diagnostics = self.validate(config);
        if diagnostics.has_errors() {
            return (None, diagnostics);
        }
        let client = match ctx.hcloud() {
            Ok(client) => client,
            Err(d) => return (None, d.into()),
        };
        let (Some(version_text), Some(architecture)) = (
            config.get("talos_version").as_str(),
            config.get("architecture").as_str(),
        ) else {
            return (None, diagnostics);
        };
        let Ok(version) = TalosVersion::parse(version_text) else {
            return (None, diagnostics);
        };
        let wanted = config.get("schematic_id").as_str();
        let selector = snapshot::find::selector(&version, architecture, wanted);
        let snapshots = match client.snapshots(&selector).await {
            Ok(snapshots) => snapshots,
            Err(e) => {
                diagnostics.push(e.to_diagnostic("looking up Talos snapshots"));
                return (None, diagnostics);
            }
        };
        let found = snapshots.into_iter().find(|image| {
            image.status == "available"
                && wanted.is_none_or(|id| {
                    image::schematic_in_description(&image.description) == Some(id)
                })
        });
        let Some(image) = found else {
            diagnostics.push(Diagnostic::error(
                "No Talos snapshot found",
                format!(
                    "The Hetzner project has no available snapshot labelled {selector}. Build one with \
                     the hct_talos_image resource (same talos_version, architecture and schematic), \
                     or check that hcloud_token belongs to the project that holds it."
                ),
            ));
            return (None, diagnostics);
        };
        let schematic = image::schematic_in_description(&image.description)
            .map(str::to_string)
            .or_else(|| wanted.map(str::to_string));
        let mut state = config.as_map().cloned().unwrap_or_default();
        state.insert("id".into(), Value::string(image.id.to_string()));
        state.insert(
            "description".into(),
            Value::string(image.description.clone()),
        );
        state.insert("created".into(), Value::string(image.created.clone()));
        match &schematic {
            Some(id) => {
                state.insert("schematic_id".into(), Value::string(id.clone()));
                state.insert(
                    "image_url".into(),
                    Value::string(image::image_url(
                        DEFAULT_FACTORY_URL,
                        id,
                        &version,
                        architecture,
                    )),
                );
                state.insert(
                    "installer_image".into(),
                    Value::string(image::installer_image(DEFAULT_FACTORY_URL, id, &version)),
                );
            }
            None => {
                diagnostics.push(Diagnostic::warning(
                    "Snapshot without a schematic",
                    format!(
                        "Snapshot {} does not name its schematic in its description, so image_url \
                         and installer_image are unknown. Set schematic_id.",
                        image.id
                    ),
                ));
            }
        }
        (Some(Value::Map(state)), diagnostics)
    }
}
