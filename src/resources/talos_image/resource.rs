//! `hct_talos_image` (resource): the schema, and validate, plan, apply,
//! read and import. Each request's values are decoded once (`model`); the
//! finding, building and deleting is the snapshot runbook's
//! (`crate::snapshot`), whose errors become diagnostics here.

use async_trait::async_trait;
use tracing::info;

use super::diagnostics::to_diagnostic;
use super::field::Field;
use super::model::{self, Attributes};
use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::snapshot::{self, Route, find, lifecycle, spec};
use crate::talos::image::DEFAULT_FACTORY_URL;
use crate::tf::schema::{Block, NestedBlock, Nesting};
use crate::tf::{Attribute, Diagnostic, Diagnostics, Schema, Type, Value};

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
        let config = Attributes::decode(config);
        let mut diagnostics = config.validate();
        diagnostics.extend(config.warnings());
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
        _private: &mut Vec<u8>,
    ) -> (Option<Value>, Diagnostics) {
        let attributes = Attributes::decode(&state);
        let Some(id) = attributes.image_id() else {
            return (Some(state), Diagnostics::new());
        };
        let client = match ctx.hcloud() {
            Ok(client) => client,
            Err(d) => return (Some(state), d.into()),
        };
        match find::current_labels(&client, id).await {
            Ok(None) => {
                info!(
                    image = id,
                    "the Talos snapshot is gone; Terraform will build it again"
                );
                (None, Diagnostics::new())
            }
            Ok(Some(labels)) => (
                Some(attributes.refreshed(&labels).encode()),
                Diagnostics::new(),
            ),
            Err(e) => (Some(state), to_diagnostic(&e).into()),
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
        let found = find::import(&client, image_id)
            .await
            .map_err(|e| to_diagnostic(&e))?;
        Ok(Attributes::imported(&found).encode())
    }
}

pub(super) fn schema() -> Schema {
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

/// Fills defaults and the offline values; decides what forces replacement.
pub(super) fn plan(prior: &Value, proposed: &Value) -> Plan {
    let mut planned = Attributes::decode(proposed).with_defaults();
    planned.fill_offline();
    let requires_replace = if prior.is_null() {
        planned.id = Field::Unknown;
        Vec::new()
    } else {
        let prior = Attributes::decode(prior);
        let replace = model::replacements(&prior, &planned);
        planned.id = if replace.is_empty() {
            prior.id
        } else {
            Field::Unknown
        };
        replace
    };
    Plan {
        planned: planned.encode(),
        requires_replace,
        private: Vec::new(),
        diagnostics: Diagnostics::new(),
    }
}

/// How the provider reaches the builder's public IPv4.
async fn route(ctx: &Context) -> Result<Route, Diagnostic> {
    Ok(match ctx.talos_proxy().await? {
        Some(proxy) => Route::Socks5(proxy),
        None => Route::Direct,
    })
}

async fn create(ctx: &Context, planned: Value) -> Applied {
    let attributes = Attributes::decode(&planned);
    let spec = match attributes.spec() {
        Ok(spec) => spec,
        Err(diagnostics) => return failed(diagnostics),
    };
    let client = match ctx.hcloud() {
        Ok(client) => client,
        Err(d) => return failed(d.into()),
    };
    match find::existing(&client, &spec).await {
        Err(e) => return failed(to_diagnostic(&e).into()),
        Ok(Some(found)) => {
            info!(
                image = found.id,
                "talos image: adopting the existing snapshot labelled {}",
                find::selector(&spec.version, &spec.architecture, Some(&spec.schematic_id))
            );
            return Applied {
                new_state: attributes.with_id(found.id).encode(),
                ..Applied::default()
            };
        }
        Ok(None) => {}
    }
    let route = match route(ctx).await {
        Ok(route) => route,
        Err(d) => return failed(d.into()),
    };
    let outcome = snapshot::build(&client, &spec, route, &ctx.cancel).await;
    Applied {
        // A snapshot that exists is recorded even when a later step failed
        // (Terraform then marks it tainted and replaces it).
        new_state: outcome
            .image
            .map_or(Value::Null, |id| attributes.with_id(id).encode()),
        private: Vec::new(),
        diagnostics: outcome
            .error
            .iter()
            .chain(&outcome.warning)
            .map(to_diagnostic)
            .collect(),
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
    let (old, new) = (Attributes::decode(prior), Attributes::decode(&planned));
    if old.labels == new.labels {
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
    let (spec, client, id) = match (new.spec(), ctx.hcloud(), old.image_id()) {
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
    match lifecycle::relabel(&client, id, &spec).await {
        Ok(()) => Applied {
            new_state: planned,
            ..Applied::default()
        },
        Err(e) => keep_prior(to_diagnostic(&e).into()),
    }
}

async fn destroy(ctx: &Context, prior: &Value) -> Applied {
    let attributes = Attributes::decode(prior);
    let Some(id) = attributes.image_id() else {
        return Applied::default();
    };
    if attributes.keep_on_destroy() {
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
    match lifecycle::delete(&client, id, attributes.delete_timeout()).await {
        Ok(()) => Applied::default(),
        Err(e) => Applied {
            new_state: prior.clone(),
            diagnostics: to_diagnostic(&e).into(),
            ..Applied::default()
        },
    }
}
