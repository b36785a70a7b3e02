//! `hct_talos_image` (resource): finds or builds the Talos snapshot a
//! cluster boots from. Hetzner has no Talos image and no import from URL,
//! so hct adopts a snapshot with the same labels when there is one, and
//! otherwise builds it: a temporary server in rescue mode writes the Image
//! Factory's raw image to its disk, and is snapshotted and deleted.
//!
//! - `spec`: the configuration, its checks, defaults, labels, description.
//! - `pipeline`: the command the rescue system runs.
//! - `ssh`: the temporary key and the SSH client.
//! - `build`: the build, step by step.
//! - `cleanup`: deleting the temporaries, and sweeping old ones.
//!
//! How hct reaches the builder's SSH: directly at its public IPv4, or —
//! when the provider has a `talos_proxy` — through that SOCKS5 proxy. One
//! proxy setting serves both: the proxies it is meant for (Tailscale's
//! userspace networking, `ssh -D`) also reach public addresses, and hct-sim's
//! proxy leads a rescue server's public IPv4 to its emulated SSH, so the
//! emulator needs no extra setting and no traffic leaves loopback.

pub mod build;
pub mod cleanup;
pub mod data_source;
pub mod pipeline;
pub mod spec;
pub mod ssh;

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tracing::info;

use self::spec::{ImageSpec, RESERVED_LABELS, default_server_type};
use self::ssh::Route;
use crate::hcloud::Client;
use crate::hcloud::models::Image;
use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::talos::image::{self, DEFAULT_FACTORY_URL};
use crate::talos::release::TalosVersion;
use crate::tf::schema::{Block, NestedBlock, Nesting};
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_talos_image";

pub struct TalosImageResource;

#[async_trait]
impl Resource for TalosImageResource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let mut diagnostics = spec::validate(config);
        diagnostics.extend(spec::warnings(config));
        diagnostics
    }

    async fn plan(&self, _ctx: &Context, request: PlanRequest) -> Plan {
        if request.proposed.is_null() {
            return Plan::default();
        }
        plan(&request.prior, &request.proposed)
    }

    async fn apply(&self, ctx: &Context, request: ApplyRequest) -> Applied {
        if request.planned.is_null() {
            return destroy(ctx, &request.prior).await;
        }
        if request.prior.is_null() {
            return create(ctx, request.planned).await;
        }
        update(ctx, &request.prior, request.planned).await
    }

    async fn read(
        &self,
        ctx: &Context,
        state: Value,
        _private: Vec<u8>,
    ) -> (Option<Value>, Diagnostics) {
        let Some(id) = image_id(&state) else {
            return (Some(state), Diagnostics::new());
        };
        let client = match ctx.hcloud() {
            Ok(client) => client,
            Err(d) => return (Some(state), d.into()),
        };
        match client.image(id).await {
            Ok(None) => {
                info!(
                    image = id,
                    "the Talos snapshot is gone; Terraform will build it again"
                );
                (None, Diagnostics::new())
            }
            Ok(Some(image)) => (Some(refreshed(state, &image)), Diagnostics::new()),
            Err(e) => (
                Some(state),
                e.to_diagnostic("reading the Talos snapshot").into(),
            ),
        }
    }

    async fn import(&self, ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        let client = ctx.hcloud()?;
        let image_id: i64 = id.trim().parse().map_err(|_| {
            Diagnostic::error(
                "Invalid import ID",
                format!("{id:?} is not a snapshot ID: import with the image's numeric ID."),
            )
        })?;
        let image = client
            .image(image_id)
            .await
            .map_err(|e| e.to_diagnostic("reading the snapshot to import"))?
            .ok_or_else(|| {
                Diagnostic::error(
                    "Snapshot not found",
                    format!("The Hetzner project has no image {image_id}."),
                )
            })?;
        imported(&image).map_err(Diagnostics::from)
    }
}

fn schema() -> Schema {
    Schema::new(
        0,
        "Finds or builds a Talos Linux snapshot in the Hetzner project, for servers to boot from. \
         The schematic ID (the Image Factory's ID of the extensions and kernel arguments) is \
         computed offline, so `schematic_id`, `image_url` and `installer_image` are known at plan \
         time.\n\nOn create, an available snapshot labelled with the same release, architecture \
         and schematic is adopted and nothing is built. Otherwise hct builds one: it uploads a \
         temporary Ed25519 SSH key, creates a temporary server (public IPv4, created stopped) in \
         `location`, boots it into the rescue system, logs in as root over SSH, registers the \
         schematic with the Image Factory and streams `image_url` through `xz -d` onto the disk \
         with `dd` under `set -euo pipefail` (a failed download or write fails the apply, with \
         the tail of the command's output), shuts the server down, snapshots it with the labels \
         and a description naming the release, architecture and schematic, and waits for the \
         snapshot. The temporary server and key are deleted on success, on failure and on \
         Ctrl-C; they are labelled `hct-temporary=talos-image-build` with an expiry, and each \
         build first deletes expired leftovers of builds that died.\n\nhct reaches the \
         builder's SSH (TCP 22) at its public IPv4 directly, or through the provider's \
         `talos_proxy` when one is set (Tailscale's userspace proxy and `ssh -D` reach public \
         addresses too; hct-sim's proxy leads to its emulated rescue systems). The rescue \
         system's host key is new on every boot and unpublished, so it is not verified; \
         nothing secret is sent over the connection.\n\nChanging the release, architecture, \
         extensions, kernel arguments or factory replaces the snapshot; `labels` are updated in \
         place. Destroying deletes the snapshot (also an adopted one) unless `keep_on_destroy`. \
         Import with the snapshot's ID.",
    )
    .attribute(Attribute::required("talos_version", Type::String).description(
        "The Talos release, e.g. `v1.12.6`. Releases with known problems get a warning. Changing \
         it replaces the snapshot.",
    ))
    .attribute(Attribute::required("architecture", Type::String).description(
        "`amd64` (x86 server types such as cx23) or `arm64` (Arm types such as cax11). Changing \
         it replaces the snapshot.",
    ))
    .attribute(Attribute::optional("extensions", Type::list(Type::String)).description(
        "Official system extensions baked into the image, e.g. `[\"siderolabs/qemu-guest-agent\"]`. \
         Part of the schematic: changing them replaces the snapshot.",
    ))
    .attribute(Attribute::optional("extra_kernel_args", Type::list(Type::String)).description(
        "Extra kernel arguments baked into the image. Part of the schematic: changing them \
         replaces the snapshot.",
    ))
    .attribute(Attribute::required("location", Type::String).description(
        "Where the temporary builder server runs, e.g. `nbg1`. The snapshot itself can be used in \
         every location.",
    ))
    .attribute(Attribute::optional_computed("server_type", Type::String).description(
        "The temporary builder's server type, of the image's architecture. Default: `cx23` for \
         amd64, `cax11` for arm64.",
    ))
    .attribute(Attribute::optional("labels", Type::map(Type::String)).description(
        "Extra labels for the snapshot. hct adds `os=talos`, `type=infra`, `version`, `arch` and \
         `schematic` (the first 32 hex digits of the schematic ID), which cannot be set here. \
         Updated in place.",
    ))
    .attribute(Attribute::optional_computed("image_factory_url", Type::String).description(
        format!(
            "The Talos Image Factory the builder downloads from (and registers the schematic \
             with). Default: `{DEFAULT_FACTORY_URL}`. Changing it replaces the snapshot."
        ),
    ))
    .attribute(Attribute::optional_computed("keep_on_destroy", Type::Bool).description(
        "Keep the snapshot when the resource is destroyed (it is only forgotten). Default: `false`.",
    ))
    .attribute(Attribute::computed("id", Type::String).description("The snapshot's image ID."))
    .attribute(Attribute::computed("schematic_id", Type::String).description(
        "The Image Factory schematic ID of `extensions` and `extra_kernel_args` (64 hex digits), \
         computed offline.",
    ))
    .attribute(Attribute::computed("image_url", Type::String).description(
        "Where the Image Factory serves the raw Hetzner image: \
         `<factory>/image/<schematic>/<version>/hcloud-<arch>.raw.xz`.",
    ))
    .attribute(Attribute::computed("installer_image", Type::String).description(
        "The factory installer image of this schematic and release (for installs and upgrades).",
    ))
    .block(NestedBlock::new(
        "timeouts",
        Nesting::Single,
        Block {
            description: "How long hct may take.".into(),
            attributes: vec![
                Attribute::optional("create", Type::String).description(format!(
                    "The whole build: server, rescue, SSH, download and write, snapshot. A \
                     duration such as `\"45m\"`. Default: `\"{}\"`. Deleting the temporaries \
                     comes on top.",
                    crate::duration::format(spec::DEFAULT_CREATE_TIMEOUT)
                )),
                Attribute::optional("delete", Type::String).description(format!(
                    "Deleting the snapshot. Default: `\"{}\"`.",
                    crate::duration::format(spec::DEFAULT_DELETE_TIMEOUT)
                )),
            ],
            ..Block::default()
        },
    ))
}

fn image_id(state: &Value) -> Option<i64> {
    state.get("id").as_str().and_then(|id| id.parse().ok())
}

/// Fills defaults and the offline values; decides what forces replacement.
fn plan(prior: &Value, proposed: &Value) -> Plan {
    let mut planned = proposed.as_map().cloned().unwrap_or_default();
    let architecture = proposed.get("architecture");
    if planned.get("server_type").is_none_or(Value::is_null) {
        let default = match architecture.as_str() {
            Some(arch) => Value::from(default_server_type(arch)),
            None => Value::Unknown,
        };
        planned.insert("server_type".into(), default);
    }
    if planned.get("image_factory_url").is_none_or(Value::is_null) {
        planned.insert("image_factory_url".into(), Value::from(DEFAULT_FACTORY_URL));
    }
    if planned.get("keep_on_destroy").is_none_or(Value::is_null) {
        planned.insert("keep_on_destroy".into(), Value::from(false));
    }
    let planned_value = Value::Map(planned.clone());
    let offline = offline_values(&planned_value);
    let schematic_id = offline
        .as_ref()
        .map_or(Value::Unknown, |(id, _, _)| Value::from(id.clone()));
    match &offline {
        Some((id, url, installer)) => {
            planned.insert("schematic_id".into(), Value::from(id.clone()));
            planned.insert("image_url".into(), Value::from(url.clone()));
            planned.insert("installer_image".into(), Value::from(installer.clone()));
        }
        None => {
            for name in ["schematic_id", "image_url", "installer_image"] {
                planned.insert(name.into(), Value::Unknown);
            }
        }
    }

    let mut requires_replace = Vec::new();
    if prior.is_null() {
        planned.insert("id".into(), Value::Unknown);
    } else {
        let differs = |name: &str| {
            let new = planned_value.get(name);
            new.is_unknown() || new != prior.get(name)
        };
        for name in ["talos_version", "architecture"] {
            if differs(name) {
                requires_replace.push(AttrPath::attr(name));
            }
        }
        let factory = |v: &Value| v.as_str().map(|f| f.trim_end_matches('/').to_string());
        let new_factory = planned_value.get("image_factory_url");
        if new_factory.is_unknown()
            || factory(new_factory) != factory(prior.get("image_factory_url"))
        {
            requires_replace.push(AttrPath::attr("image_factory_url"));
        }
        if schematic_id.is_unknown() || &schematic_id != prior.get("schematic_id") {
            let changed: Vec<&str> = ["extensions", "extra_kernel_args"]
                .into_iter()
                .filter(|name| differs(name))
                .collect();
            let changed = if changed.is_empty() {
                vec!["extensions", "extra_kernel_args"]
            } else {
                changed
            };
            requires_replace.extend(changed.into_iter().map(AttrPath::attr));
        }
        let id = if requires_replace.is_empty() {
            prior.get("id").clone()
        } else {
            Value::Unknown
        };
        planned.insert("id".into(), id);
    }
    Plan {
        planned: Value::Map(planned),
        requires_replace,
        private: Vec::new(),
        diagnostics: Diagnostics::new(),
    }
}

/// `schematic_id`, `image_url` and `installer_image`, when their inputs are known.
fn offline_values(value: &Value) -> Option<(String, String, String)> {
    let version = TalosVersion::parse(value.get("talos_version").as_str()?).ok()?;
    let architecture = value.get("architecture").as_str()?;
    image::hetzner_architecture(architecture)?;
    let factory = value.get("image_factory_url").as_str()?;
    let id = spec::schematic(value)?.id();
    let url = image::image_url(factory, &id, &version, architecture);
    let installer = image::installer_image(factory, &id, &version);
    Some((id, url, installer))
}

/// How the provider reaches the builder's public IPv4.
async fn route(ctx: &Context) -> Result<Route, Diagnostic> {
    Ok(match ctx.talos_proxy().await? {
        Some(proxy) => Route::Socks5(proxy),
        None => Route::Direct,
    })
}

/// An available snapshot with this spec's labels and schematic, waiting for
/// one that another build is still creating.
async fn find_existing(client: &Client, spec: &ImageSpec) -> Result<Option<Image>, Diagnostic> {
    let selector =
        image::snapshot_selector(&spec.version, &spec.architecture, Some(&spec.schematic_id));
    let deadline = Instant::now() + spec.create_timeout;
    let mut pause = client.poll_interval();
    loop {
        let candidates: Vec<Image> = client
            .snapshots(&selector)
            .await
            .map_err(|e| e.to_diagnostic("looking up existing Talos snapshots"))?
            .into_iter()
            .filter(|image| {
                image::schematic_in_description(&image.description)
                    .is_none_or(|id| id == spec.schematic_id)
            })
            .collect();
        if let Some(available) = candidates.iter().find(|i| i.status == "available") {
            return Ok(Some(available.clone()));
        }
        let Some(creating) = candidates.iter().find(|i| i.status == "creating") else {
            return Ok(None);
        };
        if Instant::now() >= deadline {
            return Err(Diagnostic::error(
                "Talos snapshot still being created",
                format!(
                    "Snapshot {} with the same labels is being created by another build and was \
                     not ready within the create timeout. Apply again once it is available.",
                    creating.id
                ),
            ));
        }
        info!(
            image = creating.id,
            "talos image: waiting for a snapshot another build is creating"
        );
        client
            .sleep(pause, "waiting for a snapshot being created")
            .await
            .map_err(|e| e.to_diagnostic("waiting for a Talos snapshot"))?;
        pause = (pause * 3 / 2).min(Duration::from_secs(10));
    }
}

async fn create(ctx: &Context, planned: Value) -> Applied {
    let spec = match ImageSpec::from_value(&planned) {
        Ok(spec) => spec,
        Err(diagnostics) => return failed(diagnostics),
    };
    let client = match ctx.hcloud() {
        Ok(client) => client,
        Err(d) => return failed(d.into()),
    };
    let with_id = |id: i64| {
        let mut state = planned.as_map().cloned().unwrap_or_default();
        state.insert("id".into(), Value::from(id.to_string()));
        Value::Map(state)
    };
    match find_existing(&client, &spec).await {
        Err(d) => return failed(d.into()),
        Ok(Some(image)) => {
            info!(
                image = image.id,
                "talos image: adopting the existing snapshot labelled {}",
                image::snapshot_selector(
                    &spec.version,
                    &spec.architecture,
                    Some(&spec.schematic_id)
                )
            );
            return Applied {
                new_state: with_id(image.id),
                ..Applied::default()
            };
        }
        Ok(None) => {}
    }
    let route = match route(ctx).await {
        Ok(route) => route,
        Err(d) => return failed(d.into()),
    };
    let mut outcome = build::build(&client, &spec, route, &ctx.cancel).await;
    if outcome.diagnostics.has_errors()
        && let Some(id) = outcome.image
        && let Ok(None) = client
            .with_cancel(tokio_util::sync::CancellationToken::new())
            .image(id)
            .await
    {
        outcome.image = None; // a failed create_image leaves no image
    }
    Applied {
        // A snapshot that exists is recorded even when a later step failed
        // (Terraform then marks it tainted and replaces it).
        new_state: outcome.image.map_or(Value::Null, with_id),
        private: Vec::new(),
        diagnostics: outcome.diagnostics,
    }
}

fn failed(diagnostics: Diagnostics) -> Applied {
    Applied {
        new_state: Value::Null,
        private: Vec::new(),
        diagnostics,
    }
}

async fn update(ctx: &Context, prior: &Value, planned: Value) -> Applied {
    if prior.get("labels") == planned.get("labels") {
        return Applied {
            new_state: planned,
            ..Applied::default()
        };
    }
    let keep_prior = |diagnostics: Diagnostics| Applied {
        new_state: prior.clone(),
        private: Vec::new(),
        diagnostics,
    };
    let (spec, client, id) = match (
        ImageSpec::from_value(&planned),
        ctx.hcloud(),
        image_id(prior),
    ) {
        (Ok(spec), Ok(client), Some(id)) => (spec, client, id),
        (Err(d), _, _) => return keep_prior(d),
        (_, Err(d), _) => return keep_prior(d.into()),
        (_, _, None) => {
            return keep_prior(
                Diagnostic::error(
                    "No snapshot ID",
                    "The state holds no snapshot ID to update.",
                )
                .into(),
            );
        }
    };
    match client.set_image_labels(id, &spec.labels()).await {
        Ok(_) => Applied {
            new_state: planned,
            ..Applied::default()
        },
        Err(e) => keep_prior(
            e.to_diagnostic("updating the Talos snapshot's labels")
                .into(),
        ),
    }
}

async fn destroy(ctx: &Context, prior: &Value) -> Applied {
    let Some(id) = image_id(prior) else {
        return Applied::default();
    };
    if prior.get("keep_on_destroy").as_bool() == Some(true) {
        info!(
            image = id,
            "talos image: keeping the snapshot (keep_on_destroy)"
        );
        return Applied::default();
    }
    let client = match ctx.hcloud() {
        Ok(client) => client,
        Err(d) => {
            return Applied {
                new_state: prior.clone(),
                diagnostics: d.into(),
                ..Applied::default()
            };
        }
    };
    let timeout = ImageSpec::from_value(prior)
        .map(|s| s.delete_timeout)
        .unwrap_or(spec::DEFAULT_DELETE_TIMEOUT);
    match tokio::time::timeout(timeout, client.delete_image(id)).await {
        Ok(Ok(())) => {
            info!(image = id, "talos image: deleted the snapshot");
            Applied::default()
        }
        Ok(Err(e)) => Applied {
            new_state: prior.clone(),
            diagnostics: e.to_diagnostic("deleting the Talos snapshot").into(),
            ..Applied::default()
        },
        Err(_) => Applied {
            new_state: prior.clone(),
            diagnostics: Diagnostic::error(
                "Deleting the Talos snapshot timed out",
                format!(
                    "Snapshot {id} was not deleted within timeouts.delete ({}).",
                    crate::duration::format(timeout)
                ),
            )
            .into(),
            ..Applied::default()
        },
    }
}

/// The user's labels as the snapshot has them now (drift shows in plans).
fn refreshed(state: Value, image: &Image) -> Value {
    let mut map = state.as_map().cloned().unwrap_or_default();
    let extra: std::collections::BTreeMap<String, Value> = image
        .labels
        .iter()
        .filter(|(k, _)| !RESERVED_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), Value::from(v.clone())))
        .collect();
    let had_labels = !map.get("labels").is_none_or(Value::is_null);
    if had_labels || !extra.is_empty() {
        map.insert("labels".into(), Value::Map(extra));
    }
    Value::Map(map)
}

/// The state of an imported snapshot, from its labels and description.
fn imported(image: &Image) -> Result<Value, Diagnostic> {
    let not_ours = |why: &str| {
        Diagnostic::error(
            "Not a Talos snapshot of hct",
            format!(
                "Image {} {why}. hct_talos_image imports snapshots labelled os=talos with version \
                 and arch labels, whose description names the schematic ID.",
                image.id
            ),
        )
    };
    if image.kind != "snapshot" {
        return Err(not_ours(&format!(
            "is a {} image, not a snapshot",
            image.kind
        )));
    }
    if image.labels.get("os").map(String::as_str) != Some("talos") {
        return Err(not_ours("is not labelled os=talos"));
    }
    let version = image
        .labels
        .get("version")
        .and_then(|v| TalosVersion::parse(v).ok())
        .ok_or_else(|| not_ours("has no valid version label"))?;
    let architecture = image
        .labels
        .get("arch")
        .filter(|a| image::hetzner_architecture(a).is_some())
        .ok_or_else(|| not_ours("has no arch label of amd64 or arm64"))?;
    let schematic = image::schematic_in_description(&image.description)
        .ok_or_else(|| not_ours("does not name its schematic ID in its description"))?;
    let extra: Vec<(String, Value)> = image
        .labels
        .iter()
        .filter(|(k, _)| !RESERVED_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), Value::from(v.clone())))
        .collect();
    Ok(Value::object([
        ("talos_version", Value::from(version.to_string())),
        ("architecture", Value::from(architecture.clone())),
        ("extensions", Value::Null),
        ("extra_kernel_args", Value::Null),
        ("location", Value::Null),
        ("server_type", Value::Null),
        (
            "labels",
            if extra.is_empty() {
                Value::Null
            } else {
                Value::object(extra)
            },
        ),
        ("image_factory_url", Value::from(DEFAULT_FACTORY_URL)),
        ("keep_on_destroy", Value::from(false)),
        ("id", Value::from(image.id.to_string())),
        ("schematic_id", Value::from(schematic)),
        (
            "image_url",
            Value::from(image::image_url(
                DEFAULT_FACTORY_URL,
                schematic,
                &version,
                architecture,
            )),
        ),
        (
            "installer_image",
            Value::from(image::installer_image(
                DEFAULT_FACTORY_URL,
                schematic,
                &version,
            )),
        ),
        ("timeouts", Value::Null),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const QEMU: &str = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";
    const DEFAULT: &str = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";

    fn config(pairs: &[(&str, Value)]) -> Value {
        let mut map: std::collections::BTreeMap<String, Value> = schema()
            .block
            .attributes
            .iter()
            .map(|a| (a.name.clone(), Value::Null))
            .collect();
        map.insert("timeouts".into(), Value::Null);
        map.insert("talos_version".into(), Value::from("v1.12.6"));
        map.insert("architecture".into(), Value::from("amd64"));
        map.insert("location".into(), Value::from("nbg1"));
        for (name, value) in pairs {
            map.insert(name.to_string(), value.clone());
        }
        Value::Map(map)
    }

    #[test]
    fn create_plans_offline_values_and_defaults() {
        let planned = plan(
            &Value::Null,
            &config(&[(
                "extensions",
                Value::strings(["siderolabs/qemu-guest-agent"]),
            )]),
        );
        let p = &planned.planned;
        assert_eq!(p.get("schematic_id"), &Value::from(QEMU));
        assert_eq!(
            p.get("image_url"),
            &Value::from(format!(
                "https://factory.talos.dev/image/{QEMU}/v1.12.6/hcloud-amd64.raw.xz"
            ))
        );
        assert_eq!(
            p.get("installer_image"),
            &Value::from(format!("factory.talos.dev/hcloud-installer/{QEMU}:v1.12.6"))
        );
        assert_eq!(p.get("server_type"), &Value::from("cx23"));
        assert_eq!(p.get("keep_on_destroy"), &Value::from(false));
        assert!(p.get("id").is_unknown());
        assert!(planned.requires_replace.is_empty());

        let arm = plan(
            &Value::Null,
            &config(&[("architecture", Value::from("arm64"))]),
        );
        assert_eq!(arm.planned.get("server_type"), &Value::from("cax11"));
        assert_eq!(arm.planned.get("schematic_id"), &Value::from(DEFAULT));

        let unknown = plan(&Value::Null, &config(&[("extensions", Value::Unknown)]));
        assert!(unknown.planned.get("schematic_id").is_unknown());
        assert!(unknown.planned.get("image_url").is_unknown());
    }

    #[test]
    fn schematic_changes_replace_and_labels_do_not() {
        let mut prior = plan(&Value::Null, &config(&[])).planned;
        if let Value::Map(m) = &mut prior {
            m.insert("id".into(), Value::from("300000009"));
        }
        let same = plan(
            &prior,
            &config(&[("labels", Value::object([("team", Value::from("infra"))]))]),
        );
        assert!(same.requires_replace.is_empty());
        assert_eq!(same.planned.get("id"), &Value::from("300000009"));

        let moved = plan(&prior, &config(&[("location", Value::from("fsn1"))]));
        assert!(moved.requires_replace.is_empty());

        let cases = [
            (
                "extensions",
                Value::strings(["siderolabs/qemu-guest-agent"]),
            ),
            ("extra_kernel_args", Value::strings(["console=ttyS0"])),
            ("talos_version", Value::from("v1.12.7")),
            ("architecture", Value::from("arm64")),
            (
                "image_factory_url",
                Value::from("https://factory.example.com"),
            ),
        ];
        for (attribute, value) in cases {
            let replaced = plan(&prior, &config(&[(attribute, value)]));
            assert!(
                replaced
                    .requires_replace
                    .contains(&AttrPath::attr(attribute)),
                "{attribute}: {:?}",
                replaced.requires_replace
            );
            assert!(replaced.planned.get("id").is_unknown());
        }
        // An empty list is the same schematic as none.
        let empty = plan(&prior, &config(&[("extensions", Value::List(vec![]))]));
        assert!(
            empty.requires_replace.is_empty(),
            "{:?}",
            empty.requires_replace
        );
    }

    #[test]
    fn imports_from_labels_and_description() {
        let image = Image {
            id: 42,
            kind: "snapshot".into(),
            status: "available".into(),
            description: format!("Talos Linux v1.12.6 (arm64), schematic {QEMU}"),
            labels: [
                ("os", "talos"),
                ("type", "infra"),
                ("version", "v1.12.6"),
                ("arch", "arm64"),
                ("schematic", &QEMU[..32]),
                ("team", "infra"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            ..Image::default()
        };
        let state = imported(&image).unwrap();
        assert_eq!(state.get("schematic_id"), &Value::from(QEMU));
        assert_eq!(state.get("architecture"), &Value::from("arm64"));
        assert_eq!(
            state.get("labels"),
            &Value::object([("team", Value::from("infra"))])
        );
        // The imported state plans without replacement for the same schematic.
        let replan = plan(
            &state,
            &config(&[
                ("architecture", Value::from("arm64")),
                (
                    "extensions",
                    Value::strings(["siderolabs/qemu-guest-agent"]),
                ),
                ("labels", Value::object([("team", Value::from("infra"))])),
            ]),
        );
        assert!(
            replan.requires_replace.is_empty(),
            "{:?}",
            replan.requires_replace
        );

        let mut debian = image.clone();
        debian.labels.remove("os");
        assert!(imported(&debian).unwrap_err().detail.contains("os=talos"));
    }
}
