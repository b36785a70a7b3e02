//! Why checking, finding, building or changing a Talos snapshot failed, and
//! the warning a build leaves (temporaries it could not delete). The
//! messages live here: [`SnapshotError::summary`] is a diagnostic's summary
//! and the `Display` text its detail (the factory URL's check names its
//! reason in `spec`); the resource turns them into Terraform diagnostics,
//! Hetzner API failures through `HcloudError`'s own.

use std::borrow::Cow;
use std::net::Ipv4Addr;
use std::time::Duration;

use super::cleanup;
use super::pipeline;
use crate::duration;
use crate::hcloud::HcloudError;
use crate::talos::image::DEFAULT_FACTORY_URL;
use crate::talos::release::VersionError;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A Hetzner API call failed while `doing`. During a build,
    /// `create_timeout` is the build's budget (a timeout then says so).
    #[error("{doing}: {source}")]
    Hcloud {
        doing: String,
        #[source]
        source: Box<HcloudError>,
        create_timeout: Option<Duration>,
    },
    #[error(
        "Terraform asked hct to stop while {step}. The temporary server and SSH key were \
         deleted; apply again to build the image."
    )]
    Stopped { step: String },
    #[error("{0}")]
    NoSshKey(String),
    #[error(
        "server_type {server_type:?} is {actual} on Hetzner, but a {architecture} image must be \
         written by a {wanted} server (the snapshot takes the server's architecture). Choose a \
         server type of that architecture, e.g. {suggested:?}."
    )]
    WrongArchitecture {
        server_type: String,
        actual: String,
        architecture: String,
        wanted: &'static str,
        suggested: &'static str,
    },
    #[error("Server {server} was created with a public IPv4 but shows none.")]
    NoPublicIpv4 { server: i64 },
    #[error("Server {server} has the public IPv4 {ip:?}, which is not an address.")]
    BadAddress { server: i64, ip: String },
    #[error(
        "The builder's public IPv4 {ip} is a documentation address (RFC 5737), as hct-sim \
         hands out: it is reachable only through the emulator's SOCKS5 proxy. Set \
         talos_proxy (or HCT_TALOS_PROXY) to the proxy `hct-sim serve` prints."
    )]
    Unroutable { ip: Ipv4Addr },
    #[error(
        "The builder's rescue system at {ip} did not accept SSH within the create timeout \
         ({}, waited {}). Last error: {}. Check that outbound SSH (TCP 22) to Hetzner is \
         allowed from where Terraform runs (or through talos_proxy, if set), or raise \
         timeouts.create.",
        duration::format(*.create_timeout),
        duration::format(*.waited),
        .last.as_deref().unwrap_or("none")
    )]
    SshTimedOut {
        ip: std::net::IpAddr,
        create_timeout: Duration,
        waited: Duration,
        last: Option<String>,
    },
    #[error(
        "Downloading and writing {image_url} did not finish within the create timeout ({}). \
         Raise timeouts.create, or check the builder's connection to the Image Factory.",
        duration::format(*.create_timeout)
    )]
    WriteTimedOut {
        image_url: String,
        create_timeout: Duration,
    },
    /// The SSH session broke while the image was being written.
    #[error("{why} while writing {image_url} on the builder.")]
    WriteBroken { image_url: String, why: String },
    /// The write command ended with a failure (`status` None: no status).
    #[error(
        "Downloading {image_url} and writing it to {} on the builder ended {}. Its last \
         output:\n\n{}\n\nCheck that the Image Factory serves this release, architecture and \
         schematic (talos_version, architecture, extensions, image_factory_url) and that the \
         factory is reachable from Hetzner. Nothing was snapshotted; the temporary server and \
         key were deleted.",
        pipeline::DISK,
        ended(*.status),
        or_none(.output)
    )]
    WriteFailed {
        image_url: String,
        status: Option<u32>,
        output: String,
    },
    #[error(
        "Snapshot {image} with the same labels is being created by another build and was not \
         ready within the create timeout. Apply again once it is available."
    )]
    StillCreating { image: i64 },
    /// A warning: the build's temporaries outlived it.
    #[error(
        "hct could not delete everything the image build created:\n  - {}\n\nThey are \
         labelled {}={} and {}={build_id}; the next hct_talos_image build deletes them once \
         they expire, or delete them in the Hetzner console now (they cost money while they \
         exist).",
        .leftovers.join("\n  - "),
        cleanup::TEMPORARY_LABEL,
        cleanup::TEMPORARY_VALUE,
        cleanup::BUILD_LABEL
    )]
    NotDeleted {
        build_id: String,
        leftovers: Vec<String>,
    },
    #[error(
        "Snapshot {image} was not deleted within timeouts.delete ({}).",
        duration::format(*.timeout)
    )]
    DeleteTimedOut { image: i64, timeout: Duration },
    #[error("The Hetzner project has no image {image}.")]
    NotFound { image: i64 },
    #[error(
        "Image {image} {why}. hct_talos_image imports snapshots labelled os=talos with version \
         and arch labels, whose description names the schematic ID."
    )]
    NotOurs { image: i64, why: String },

    // What an image spec is checked for, before anything is built.
    #[error("{0}")]
    InvalidVersion(#[source] VersionError),
    #[error("architecture = {architecture:?}: use \"amd64\" or \"arm64\".")]
    InvalidArchitecture { architecture: String },
    #[error(
        "location = {location:?} is not a Hetzner location name. Use one such as \"nbg1\", \
         \"fsn1\" or \"hel1\" (where the temporary builder server runs; the snapshot can be \
         used in every location)."
    )]
    InvalidLocation { location: String },
    #[error("server_type = {server_type:?} is not a Hetzner server type name such as \"cx23\".")]
    InvalidServerType { server_type: String },
    #[error(
        "server_type = {server_type:?} is {}, but architecture = {architecture:?}: the image \
         must be written by a server of its own architecture, or the snapshot is of the wrong \
         one. Use e.g. \"{suggested}\", or leave server_type out.",
        kind_of_type(*.is_arm)
    )]
    ServerTypeArchitecture {
        server_type: String,
        architecture: String,
        is_arm: bool,
        suggested: &'static str,
    },
    #[error("{text:?} is not an {what}.")]
    InvalidSchematicEntry { text: String, what: &'static str },
    #[error(
        "image_factory_url = {factory:?} {why}. Use the factory's base URL, e.g. \
         \"{DEFAULT_FACTORY_URL}\"."
    )]
    InvalidFactory { factory: String, why: String },
    #[error(
        "hct sets the label {key:?} itself ({}) to find the snapshot again; choose another key.",
        .reserved.join(", ")
    )]
    ReservedLabel {
        key: String,
        /// The labels hct sets itself.
        reserved: &'static [&'static str],
    },
    #[error(
        "label key {key:?} is not valid on Hetzner: at most 63 letters, digits, '-', '_' or \
         '.', starting and ending with a letter or digit (optionally after a \"prefix/\")."
    )]
    InvalidLabelKey { key: String },
    #[error(
        "label value {value:?} of {key:?} is not valid on Hetzner: at most 63 letters, digits, \
         '-', '_' or '.', starting and ending with a letter or digit."
    )]
    InvalidLabelValue { key: String, value: String },
}

impl SnapshotError {
    /// A Hetzner failure outside a build.
    pub fn hcloud(doing: impl Into<String>) -> impl FnOnce(HcloudError) -> SnapshotError {
        let doing = doing.into();
        move |source| SnapshotError::Hcloud {
            doing,
            source: Box::new(source),
            create_timeout: None,
        }
    }

    /// Whether this is only a warning (the work itself succeeded or failed
    /// for another reason).
    pub fn is_warning(&self) -> bool {
        matches!(self, SnapshotError::NotDeleted { .. })
    }

    /// The Hetzner failure behind this error, with what hct was doing.
    pub fn hetzner(&self) -> Option<(&str, &HcloudError)> {
        match self {
            SnapshotError::Hcloud { doing, source, .. } => Some((doing, source)),
            _ => None,
        }
    }

    /// What to add to a Hetzner failure's explanation: a build's timeout
    /// is its create timeout.
    pub fn hint(&self) -> Option<String> {
        match self {
            SnapshotError::Hcloud {
                source,
                create_timeout: Some(timeout),
                ..
            } if matches!(**source, HcloudError::Timeout { .. }) => Some(format!(
                "The build's create timeout is {}; raise timeouts.create if Hetzner is slow.",
                duration::format(*timeout)
            )),
            _ => None,
        }
    }

    /// One line saying what went wrong (the detail is `Display`).
    pub fn summary(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            SnapshotError::Hcloud { doing, .. } => {
                return Cow::Owned(format!("Hetzner Cloud: {doing} failed"));
            }
            SnapshotError::Stopped { .. } => "Talos image build stopped",
            SnapshotError::NoSshKey(_) => "Talos image build: no SSH key",
            SnapshotError::WrongArchitecture { .. } => "Builder server of the wrong architecture",
            SnapshotError::NoPublicIpv4 { .. } => {
                "Talos image build: the builder has no public IPv4"
            }
            SnapshotError::BadAddress { .. } => "Talos image build: unexpected builder address",
            SnapshotError::Unroutable { .. } => {
                "Talos image build: the builder's address is not routable"
            }
            SnapshotError::SshTimedOut { .. } => {
                "Talos image build: SSH to the rescue system timed out"
            }
            SnapshotError::WriteTimedOut { .. } => "Talos image build: writing the image timed out",
            SnapshotError::WriteBroken { .. } | SnapshotError::WriteFailed { .. } => {
                "Talos image build: writing the image failed"
            }
            SnapshotError::StillCreating { .. } => "Talos snapshot still being created",
            SnapshotError::NotDeleted { .. } => "Temporary Talos image builder not deleted",
            SnapshotError::DeleteTimedOut { .. } => "Deleting the Talos snapshot timed out",
            SnapshotError::NotFound { .. } => "Snapshot not found",
            SnapshotError::NotOurs { .. } => "Not a Talos snapshot of hct",
            SnapshotError::InvalidVersion(_) => "Invalid Talos version",
            SnapshotError::InvalidArchitecture { .. } => "Invalid architecture",
            SnapshotError::InvalidLocation { .. } => "Invalid location",
            SnapshotError::InvalidServerType { .. } => "Invalid server type",
            SnapshotError::ServerTypeArchitecture { .. } => {
                "Builder server type of the wrong architecture"
            }
            SnapshotError::InvalidSchematicEntry { .. } => "Invalid schematic entry",
            SnapshotError::InvalidFactory { .. } => "Invalid Image Factory URL",
            SnapshotError::ReservedLabel { .. } => "Reserved label",
            SnapshotError::InvalidLabelKey { .. } | SnapshotError::InvalidLabelValue { .. } => {
                "Invalid label"
            }
        })
    }
}

/// How the write command ended, for [`SnapshotError::WriteFailed`].
fn ended(status: Option<u32>) -> String {
    status.map_or_else(
        || "without an exit status".to_string(),
        |s| format!("with status {s}"),
    )
}

fn or_none(output: &str) -> &str {
    if output.is_empty() { "(none)" } else { output }
}

fn kind_of_type(is_arm: bool) -> &'static str {
    if is_arm {
        "an Arm (Ampere) type"
    } else {
        "an x86 type"
    }
}
