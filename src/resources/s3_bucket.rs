//! The `bucket` attribute: an S3-compatible bucket of etcd snapshots
//! (Hetzner Object Storage by default), as `hct_cluster.etcd_backup` and
//! the `hct_etcd_snapshots` data source name it; its attributes and their
//! typed form, decoded once (the client is `backup::Bucket`).

use crate::backup::{BucketConfig, hetzner_endpoint};
use crate::secret::Secret;
use crate::tf::{AttrPath, Attribute, Diagnostic, Type, Value};

pub const ATTRIBUTE: &str = "bucket";
/// Hetzner Object Storage's location when none is named.
const DEFAULT_LOCATION: &str = "fsn1";

/// How the keys are taken.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Write-only (a resource): never in plan or state.
    WriteOnly,
    /// Sensitive (a data source, which Terraform gives no write-only
    /// attributes): in its state, hidden in plans and output.
    Sensitive,
    /// Sensitive in an action's configuration (in no state; the action
    /// writes).
    Action,
}

pub fn attributes(keys: Keys) -> Vec<Attribute> {
    let key = |name: &str| {
        let attribute = Attribute::required(name, Type::String).sensitive();
        match keys {
            Keys::WriteOnly => attribute.write_only(),
            Keys::Sensitive | Keys::Action => attribute,
        }
    };
    vec![
        Attribute::required("name", Type::String).description("The bucket; it must exist."),
        Attribute::optional("location", Type::String).description(
            "Hetzner Object Storage's location (`fsn1`, `nbg1`, `hel1`; default `fsn1`): the \
             endpoint's host and the region requests are signed for.",
        ),
        Attribute::optional("endpoint", Type::String).description(
            "Another S3-compatible server instead, e.g. `https://s3.example.com`, asked \
             path-style (`<endpoint>/<bucket>/<key>`). Default: Hetzner's, \
             `https://<bucket>.<location>.your-objectstorage.com`.",
        ),
        Attribute::optional("prefix", Type::String)
            .description("Put before every object's name; default `<cluster name>/`."),
        key("access_key").description(match keys {
            Keys::WriteOnly => {
                "The S3 access key (write-only: Terraform and OpenTofu 1.11 or newer; never in \
                 plan or state). Its key pair needs to list and put objects in the bucket, and \
                 for a restore from it, read them."
            }
            Keys::Sensitive => {
                "The S3 access key (sensitive: like every data source argument, in state). A \
                 key pair that may only read the bucket is enough."
            }
            Keys::Action => {
                "The S3 access key (sensitive; an action keeps nothing in state). Its key pair \
                 needs to list and put objects in the bucket."
            }
        }),
        key("secret_key").description("The S3 secret key, as `access_key`."),
    ]
}

/// `bucket` (the value at `path`), typed: Err names the attribute that is
/// wrong; None when it is null. The prefix defaults to `<cluster>/`.
pub fn config(
    bucket: &Value,
    cluster: &str,
    path: &AttrPath,
) -> Result<Option<BucketConfig>, Diagnostic> {
    if bucket.is_null() {
        return Ok(None);
    }
    let at = |name: &str| path.clone().attr_of(name);
    let text = |name: &str| {
        bucket
            .get(name)
            .as_str()
            .map(str::trim)
            .filter(|t| !t.is_empty())
    };
    let missing = |name: &str, what: &str| {
        Diagnostic::error(format!("{path}.{name} is not set"), format!("Set {what}.")).at(at(name))
    };
    let name = text("name").ok_or_else(|| missing("name", "the bucket's name"))?;
    // S3's rule for names; Hetzner's endpoint puts the name in a host name
    // its certificate covers only without dots.
    let path_style = text("endpoint").is_some();
    let allowed = |c: char| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (path_style && c == '.')
    };
    let edges = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=63).contains(&name.len())
        || !name.chars().all(allowed)
        || !edges(name.chars().next())
        || !edges(name.chars().last())
    {
        return Err(Diagnostic::error(
            format!("Invalid {path}.name"),
            format!(
                "{name:?} is no bucket name: 3 to 63 lowercase letters, digits and hyphens, \
                 starting and ending with a letter or digit{}.",
                if path_style { " (dots allowed)" } else { "" }
            ),
        )
        .at(at("name")));
    }
    let location = text("location").unwrap_or(DEFAULT_LOCATION);
    // Hetzner's endpoint takes the bucket in the host name; one named is
    // asked path-style (self-hosted S3 servers need no DNS per bucket).
    let endpoint = text("endpoint")
        .map(str::to_string)
        .unwrap_or_else(|| hetzner_endpoint(location));
    let endpoint = url::Url::parse(&endpoint)
        .ok()
        .filter(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some())
        .ok_or_else(|| {
            Diagnostic::error(
                format!("Invalid {path}.endpoint"),
                format!(
                    "{endpoint:?} is not an http(s) URL; expected e.g. \"https://s3.example.com\", \
                     or leave it unset for Hetzner Object Storage."
                ),
            )
            .at(at("endpoint"))
        })?;
    let prefix = match bucket.get("prefix").as_str() {
        Some(prefix) => prefix.to_string(),
        None => format!("{cluster}/"),
    };
    let key = |name: &str| {
        text(name)
            .map(Secret::new)
            .ok_or_else(|| missing(name, "the bucket's S3 key"))
    };
    Ok(Some(BucketConfig {
        endpoint,
        name: name.to_string(),
        region: location.to_string(),
        path_style,
        prefix,
        access_key: key("access_key")?,
        secret_key: key("secret_key")?,
    }))
}

/// A warning for an `http://` endpoint off this machine: each signed
/// request (the access key's id, a signature good for minutes) would cross
/// the network in the clear. The snapshots themselves are encrypted anyway.
pub fn plain_http_warning(bucket: &Value, path: &AttrPath) -> Option<Diagnostic> {
    let endpoint = url::Url::parse(bucket.get("endpoint").as_str()?).ok()?;
    let local = match endpoint.host()? {
        url::Host::Domain(name) => name == "localhost",
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    (endpoint.scheme() == "http" && !local).then(|| {
        Diagnostic::warning(
            format!("{path}.endpoint is plain http"),
            "Each request to the bucket would cross the network unencrypted, with the access \
             key's id and a signature good for minutes. Use https.",
        )
        .at(path.clone().attr_of("endpoint"))
    })
}

/// A `bucket` value for tests: Hetzner's defaults, keys `AKID`/`SECRET`,
/// with `fields` set over it.
#[cfg(test)]
pub fn for_tests(fields: &[(&str, Value)]) -> Value {
    let mut bucket = Value::object([
        ("name", Value::from("backups")),
        ("location", Value::Null),
        ("endpoint", Value::Null),
        ("prefix", Value::Null),
        ("access_key", Value::from("AKID")),
        ("secret_key", Value::from("SECRET")),
    ]);
    for (name, value) in fields {
        crate::resources::values::set(&mut bucket, name, value.clone());
    }
    bucket
}
