//! `hct_cluster`'s configuration: checks that need no API (at validate
//! time, with unknowns allowed), and its decoding into the settings and the
//! control plane's group spec the cluster runbook works from.

use super::settings_schema::{REQUIRED_SETTINGS, SETTINGS};
use crate::cluster::GroupSpec;
use crate::cluster::addons;
use crate::cluster::kube_api::manifests;
use crate::cluster::preflight::{self, Paths};
use crate::cluster::settings::{ClusterSettings, ConfigDelivery, Keys, NodeTraits};
use crate::network_plan::CONTROL_PLANE_GROUP;
use crate::network_plan::NetworkPlan;
use crate::resources::labels::validate_server_labels;
use crate::resources::node_group;
use crate::resources::timeouts;
use crate::resources::values::string_list;
use crate::talos::config::{Contract, DEFAULT_INSTALL_DISK, check_kubernetes_supported};
use crate::talos::image::schematic::Schematic;
use crate::talos::release;
use crate::talos::release::{KubernetesVersion, TalosVersion};
use crate::talos::{Role, Secrets};
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

/// Longest cluster name: server names `<name>-<pool>-<n>` must stay
/// hostnames (63 characters) with room for pool names.
pub const MAX_NAME: usize = 40;

pub fn attr(name: &str) -> AttrPath {
    AttrPath::attr(name)
}

pub fn control_plane_attr(name: &str) -> AttrPath {
    AttrPath::attr("control_plane").attr_of(name)
}

/// A string attribute, empty when unknown or null (validate checked it).
pub fn text<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).as_str().unwrap_or_default()
}

/// Where preflight findings about the control plane point.
pub fn paths() -> Paths {
    Paths {
        network_id: attr("network_id"),
        network_plan: attr("network_plan"),
        image_id: attr("image_id"),
        server_type: control_plane_attr("server_type"),
        location: control_plane_attr("location"),
    }
}

/// The default schematic: no extensions, no extra kernel arguments.
pub fn default_schematic() -> String {
    Schematic::default().id()
}

/// The Kubernetes version Talos `talos_version` installs by default.
pub fn default_kubernetes_version(talos_version: &str) -> Option<String> {
    let talos = supported_release(talos_version).ok()?;
    let contract = Contract::of(&talos).ok()?;
    Some(contract.default_kubernetes_version().to_string())
}

/// Checks what can be checked without Hetzner; unknown values pass.
pub fn validate(config: &Value) -> Diagnostics {
    let mut found = check_form(config);
    found.extend(validate_settings(config));
    if let Some(location) = config.get("control_plane").get("location").as_str() {
        let (_, warning) = preflight::location(location, control_plane_attr("location"));
        found.extend(warning);
    }
    found.extend(validate_server_labels(
        config.get("control_plane").get("server_labels"),
        control_plane_attr("server_labels"),
    ));
    found.extend(validate_manifests(config.get("bootstrap_manifests")));
    found.extend(super::addons::validate_token(config));
    found.extend(super::etcd_backup::validate(config));
    found.extend(timeouts::validate(config));
    found
}

/// Whether the configuration is in the parallel form: the settings come
/// from `worker_join` (set, maybe still unknown).
pub fn parallel_form(config: &Value) -> bool {
    !config.get("worker_join").is_null()
}

/// The settings come from one place: `worker_join` (the parallel form) or
/// this resource's own attributes (the serial form), not both.
fn check_form(config: &Value) -> Diagnostics {
    let mut found = Diagnostics::new();
    if parallel_form(config) {
        // The one setting beside the bundle: the CA keys it does not carry.
        for name in SETTINGS.into_iter().filter(|n| *n != "machine_secrets") {
            if !config.get(name).is_null() {
                found.push(
                    Diagnostic::error(
                        "Cluster settings given twice",
                        format!(
                            "{name} is set here and in worker_join: with worker_join = \
                             hct_cluster_secrets.<name>.worker_join the cluster takes every \
                             cluster-wide setting from hct_cluster_secrets (the pools read the \
                             same bundle). Move {name} to hct_cluster_secrets, or remove \
                             worker_join and set the settings here."
                        ),
                    )
                    .at(attr(name)),
                );
            }
        }
    } else {
        for name in REQUIRED_SETTINGS {
            if config.get(name).is_null() {
                found.push(
                    Diagnostic::error(
                        "Missing cluster setting",
                        format!(
                            "Set {name}, or set worker_join = \
                             hct_cluster_secrets.<name>.worker_join to take every cluster-wide \
                             setting from there."
                        ),
                    )
                    .at(attr(name)),
                );
            }
        }
    }
    found
}

/// Checks of the cluster-wide settings (see `settings_schema`), wherever
/// they are set; unknown values pass.
pub fn validate_settings(config: &Value) -> Diagnostics {
    let mut found = Diagnostics::new();
    if let Some(name) = config.get("name").as_str()
        && !(crate::talos::config::is_cluster_name(name) && name.len() <= MAX_NAME)
    {
        found.push(
            Diagnostic::error(
                "Invalid cluster name",
                format!(
                    "name = {name:?}: use 1-{MAX_NAME} lower-case letters, digits and `-`, \
                     starting and ending with a letter or digit (it prefixes every server name)."
                ),
            )
            .at(attr("name")),
        );
    }
    if let Some(text) = config.get("network_plan").as_str()
        && let Err(why) = parse_plan(text)
    {
        found.push(
            Diagnostic::error(
                "Invalid network plan",
                format!("{why}. Pass data.hct_network_plan.<name>.json."),
            )
            .at(attr("network_plan")),
        );
    }
    if let Some(version) = config.get("talos_version").as_str() {
        found.extend(check_talos_version(version));
        if let Some(kubernetes) = config.get("kubernetes_version").as_str() {
            found.extend(check_kubernetes_version(version, kubernetes));
        }
    }
    if let Some(id) = config.get("image_id").as_str()
        && id.parse::<i64>().is_err()
    {
        found.push(
            Diagnostic::error(
                "Invalid image_id",
                format!("{id:?} is not a Hetzner image id; use hct_talos_image.<name>.id."),
            )
            .at(attr("image_id")),
        );
    }
    if let Some(id) = config.get("schematic_id").as_str()
        && !(id.len() == 64
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    {
        found.push(
            Diagnostic::error(
                "Invalid schematic_id",
                format!("{id:?} is not an Image Factory schematic id (64 lower-case hex digits)."),
            )
            .at(attr("schematic_id")),
        );
    }
    if let Some(disk) = config.get("install_disk").as_str()
        && !disk.starts_with("/dev/")
    {
        found.push(
            Diagnostic::error(
                "Invalid install_disk",
                format!("{disk:?}: use a device path such as /dev/sda."),
            )
            .at(attr("install_disk")),
        );
    }
    // "user_data" is warned about at plan time, where an existing cluster's
    // state counts too.
    if let Some(delivery) = config.get("config_delivery").as_str()
        && ConfigDelivery::parse(delivery).is_none()
    {
        found.push(
            Diagnostic::error(
                "Invalid config_delivery",
                format!("{delivery:?}: use \"apply\" (the default) or \"user_data\"."),
            )
            .at(attr("config_delivery")),
        );
    }
    if let Some(text) = config.get("machine_secrets").as_str()
        && let Err(e) = Secrets::from_yaml(text)
    {
        found.push(
            Diagnostic::error(
                "Invalid machine_secrets",
                format!("{e}. Pass a talosctl secrets.yaml (talosctl gen secrets)."),
            )
            .at(attr("machine_secrets")),
        );
    }
    found
}

/// Unique names; contents that are Kubernetes objects (when known).
fn validate_manifests(list: &Value) -> Diagnostics {
    let mut found = Diagnostics::new();
    let mut names = Vec::new();
    for (n, manifest) in list.as_list().unwrap_or_default().iter().enumerate() {
        let at = AttrPath::attr("bootstrap_manifests").index(n as i64);
        if let Some(name) = manifest.get("name").as_str() {
            if name.trim().is_empty() || names.contains(&name) {
                found.push(
                    Diagnostic::error(
                        "Invalid bootstrap manifest name",
                        format!(
                            "{name:?}: each manifest needs a name of its own (Talos keeps them by \
                             name)."
                        ),
                    )
                    .at(at.clone().attr_of("name")),
                );
            }
            if name == addons::APPROVER_MANIFEST {
                found.push(
                    Diagnostic::error(
                        "Reserved bootstrap manifest name",
                        format!(
                            "{name:?} is the name of hct's own CSR approver manifest; name yours \
                             differently (or set kubelet_serving_cert_approval = false and keep \
                             your own approver under another name)."
                        ),
                    )
                    .at(at.clone().attr_of("name")),
                );
            }
            names.push(name);
        }
        if let Some(contents) = manifest.get("contents").as_str()
            && let Err(why) = manifests::refs(contents)
        {
            found.push(
                Diagnostic::error(
                    "Invalid bootstrap manifest",
                    format!("{why}. Each YAML document must be one Kubernetes object."),
                )
                .at(at.attr_of("contents")),
            );
        }
    }
    found
}

/// The cluster's settings as state records them.
pub fn state_settings(state: &Value) -> Result<ClusterSettings, String> {
    state
        .get("machine_secrets")
        .as_str()
        .ok_or_else(|| "no machine_secrets in state".to_string())
        .and_then(|text| Secrets::from_yaml(text).map_err(|e| e.to_string()))
        .and_then(|secrets| settings(state, secrets).map_err(|d| d.summary))
}

/// `bootstrap_manifests` as (name, contents); unknown ones left out.
pub fn bootstrap_manifests(value: &Value) -> Vec<(String, String)> {
    value
        .get("bootstrap_manifests")
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|m| {
            Some((
                m.get("name").as_str()?.to_string(),
                m.get("contents").as_str()?.to_string(),
            ))
        })
        .collect()
}

/// `bootstrap_manifest_objects`: each manifest's objects; Unknown while
/// a manifest is, null without manifests.
pub fn manifest_objects(value: &Value) -> Value {
    let list = value.get("bootstrap_manifests");
    if !list.is_wholly_known() {
        return Value::Unknown;
    }
    if list.is_null() {
        // No manifests, no record: states made before the attribute plan no
        // change.
        return Value::Null;
    }
    Value::Map(
        bootstrap_manifests(value)
            .into_iter()
            .map(|(name, contents)| {
                let objects = manifests::refs(&contents)
                    .unwrap_or_default()
                    .iter()
                    .map(|o| Value::from(o.to_string()))
                    .collect();
                (name, Value::List(objects))
            })
            .collect(),
    )
}

pub fn parse_plan(text: &str) -> Result<NetworkPlan, String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    NetworkPlan::from_json(&json)
}

/// A `talos_version` hct makes configs for, or why not.
fn supported_release(text: &str) -> Result<TalosVersion, String> {
    let version = TalosVersion::parse(text).map_err(|e| e.to_string())?;
    Contract::of(&version).map_err(|e| e.to_string())?;
    Ok(version)
}

fn check_talos_version(version: &str) -> Diagnostics {
    let mut found = Diagnostics::new();
    let release = match supported_release(version) {
        Ok(release) => release,
        Err(why) => {
            found.push(
                Diagnostic::error("Unsupported Talos version", why).at(attr("talos_version")),
            );
            return found;
        }
    };
    found.extend(release::known_problem(&release).map(|mut warning| {
        // Its own summary: Terraform folds warnings with the same one.
        warning.summary = format!("The nodes run Talos {release}, which has a known problem");
        warning.detail += " On a running cluster, set talos_version (and image_id, to an \
                           image of that release) and apply: hct upgrades the nodes in \
                           place, one at a time.";
        warning.at(attr("talos_version"))
    }));
    found
}

fn check_kubernetes_version(talos: &str, kubernetes: &str) -> Diagnostics {
    let Ok(talos) = supported_release(talos) else {
        return Diagnostics::new();
    };
    let checked = KubernetesVersion::parse(kubernetes)
        .map_err(|e| e.to_string())
        .and_then(|k| check_kubernetes_supported(&k, &talos).map_err(|e| e.to_string()));
    match checked {
        Ok(()) => Diagnostics::new(),
        Err(why) => Diagnostic::error("Unsupported Kubernetes version", why)
            .at(attr("kubernetes_version"))
            .into(),
    }
}

/// The settings of a wholly known configuration (after defaults), with the
/// secrets to use; None when something is still unknown.
pub fn settings(value: &Value, secrets: Secrets) -> Result<ClusterSettings, Diagnostic> {
    let text = |name: &str| text(value, name).to_string();
    let plan = parse_plan(&text("network_plan"))
        .map_err(|why| Diagnostic::error("Invalid network plan", why).at(attr("network_plan")))?;
    Ok(ClusterSettings {
        cluster_name: text("name"),
        network_id: value.get("network_id").as_i64().unwrap_or_default(),
        plan,
        talos_version: supported_release(&text("talos_version")).map_err(|why| {
            Diagnostic::error("Unsupported Talos version", why).at(attr("talos_version"))
        })?,
        kubernetes_version: match value.get("kubernetes_version").as_str() {
            Some(text) => Some(KubernetesVersion::parse(text).map_err(|e| {
                Diagnostic::error("Unsupported Kubernetes version", e.to_string())
                    .at(attr("kubernetes_version"))
            })?),
            None => None,
        },
        image_id: text("image_id"),
        schematic_id: value
            .get("schematic_id")
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(default_schematic),
        install_disk: value
            .get("install_disk")
            .as_str()
            .unwrap_or(DEFAULT_INSTALL_DISK)
            .to_string(),
        delivery: value
            .get("config_delivery")
            .as_str()
            .and_then(ConfigDelivery::parse)
            .unwrap_or(ConfigDelivery::DEFAULT),
        ssh_key_ids: value
            .get("ssh_key_ids")
            .as_list()
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_i64)
            .collect(),
        keys: Keys::Cluster(secrets),
    })
}

/// Whether everything preflight looks at is known (at create, computed
/// attributes are not, and need not be).
pub fn preflight_inputs_known(value: &Value) -> bool {
    [
        "network_id",
        "network_plan",
        "talos_version",
        "control_plane",
    ]
    .iter()
    .all(|name| value.get(name).is_wholly_known() && !value.get(name).is_null())
}

/// The control plane as a group of servers.
pub fn control_plane_group(value: &Value) -> GroupSpec {
    node_group::group_spec(
        CONTROL_PLANE_GROUP,
        Role::ControlPlane,
        value.get("control_plane"),
        control_plane_attr("location"),
        NodeTraits {
            config_patches: string_list(value.get("config_patches")),
            inline_manifests: inline_manifests(value),
            ..NodeTraits::default()
        },
    )
}

/// hct's approver as a manifest (name, contents), for the plan's nodes.
pub fn approver_manifest(value: &Value) -> Option<(String, String)> {
    let plan = parse_plan(text(value, "network_plan")).ok()?;
    let contents = addons::approver_manifest(text(value, "name"), &plan);
    Some((addons::APPROVER_MANIFEST.to_string(), contents))
}

/// Control planes' inline manifests: the bootstrap manifests, the approver.
pub fn inline_manifests(value: &Value) -> Vec<(String, String)> {
    let mut out = bootstrap_manifests(value);
    if super::addons::addons(value).csr_approval {
        out.extend(approver_manifest(value));
    }
    out
}

/// `config_delivery = "user_data"` (set, or kept from the state of a cluster
/// made when it was hct's default): what it exposes, to whom, the ways out.
pub fn user_data_warning(planned: &Value) -> Diagnostic {
    let manifests = if !bootstrap_manifests(planned).is_empty() {
        " The bootstrap_manifests are in the control planes' configs too (Talos keeps \
         its inline manifests there), so every Secret or token in them is as exposed."
    } else {
        ""
    };
    Diagnostic::warning(
        "Machine configs in Hetzner user data: readable by every pod",
        format!(
            "With config_delivery = \"user_data\" each node's machine config stays in its \
             server's user data, which Hetzner's metadata service \
             (http://{}/hetzner/v1/userdata) hands to any process on the server without \
             authentication, pods included: on control planes every CA key, the \
             service-account key and the secretbox secret; on workers the join tokens. \
             Set config_delivery = \"apply\" (the default for new clusters: configs applied in \
             maintenance mode, user data empty) for the servers created from then on, or block \
             pods from the metadata service: hct_network_plan's cilium_metadata_policy is a \
             Cilium policy that does (host-network pods keep it). Servers created with user \
             data keep it until they are replaced; treat the secrets on them as exposed \
             (docs/guides/security.md).{manifests}",
            crate::network_plan::HETZNER_METADATA
        ),
    )
    .at(attr("config_delivery"))
}
