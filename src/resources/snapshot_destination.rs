//! `etcd_backup`: where etcd snapshots go (a local directory or a
//! bucket, `s3_bucket`) and to whom they are encrypted: its attribute, its
//! checks and its typed form. `hct_cluster` takes its snapshots there
//! before risky changes, the `hct_etcd_snapshot` action when invoked.

use std::path::PathBuf;

use crate::backup::{BucketConfig, Destination, Recipients, Why};
use crate::resources::s3_bucket::{self, Keys};
use crate::resources::values::string_list;
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Mode, Nesting, Type, Value};

pub const ATTRIBUTE: &str = "etcd_backup";
const BUCKET: &str = s3_bucket::ATTRIBUTE;

/// The attribute, `mode` (the `hct_etcd_snapshot` action's is required),
/// its bucket's keys taken as `keys`, for snapshots taken for `why`.
pub fn attribute(mode: Mode, keys: Keys, why: Why) -> Attribute {
    let why = why.as_str();
    Attribute::nested(
        ATTRIBUTE,
        mode,
        Nesting::Single,
        vec![
            Attribute::optional("local_directory", Type::String).description(format!(
                "Where the snapshots go, relative to the directory Terraform runs in (made, \
                 owner-only, if missing), e.g. `\"${{path.root}}/etcd-snapshots\"`. Each is \
                 `<cluster>-<UTC time>-{why}.etcd.age`; hct never deletes one. This \
                 or `bucket`.",
            )),
            Attribute::nested(
                BUCKET,
                Mode::Optional,
                Nesting::Single,
                s3_bucket::attributes(keys),
            )
            .description(format!(
                "An S3-compatible bucket the snapshots go to (Hetzner Object Storage by \
                     default): each as `<prefix><cluster>-<UTC time>-{why}.etcd.age`, \
                     with its facts beside it as `….json`. hct never deletes one: set a \
                     lifecycle rule on the bucket for retention. This or \
                     `local_directory`.",
            )),
            Attribute::required("age_recipients", Type::list(Type::String)).description(
                "age X25519 recipients (`age1…`, from `age-keygen`); each snapshot is \
                 encrypted to all of them. A snapshot holds every object of the cluster, \
                 Secrets included: it is never written unencrypted. Keep an identity \
                 somewhere other than beside the snapshots.",
            ),
        ],
    )
    .description(
        "etcd snapshots: before a change that puts a running control plane at risk (a Talos \
         or Kubernetes upgrade, any new control-plane machine config, a control plane \
         leaving, a resize), hct takes a snapshot over the Talos API, checks etcd's hash of \
         it, encrypts it and writes it here before it changes any running control plane. \
         Without this or `skip_pre_change_snapshot`, such a change is refused at plan (also \
         when the plan cannot know the new configs yet, as with a change of \
         `hct_cluster_secrets`). See docs/guides/backup-and-restore.md.",
    )
}

/// `etcd_backup.bucket` of `value`, typed; the prefix defaults to
/// `<cluster>/`.
pub fn bucket_config(value: &Value, cluster: &str) -> Result<Option<BucketConfig>, Diagnostic> {
    s3_bucket::config(
        value.get(ATTRIBUTE).get(BUCKET),
        cluster,
        &AttrPath::attr(ATTRIBUTE).attr_of(BUCKET),
    )
}

fn recipients_path(index: usize) -> AttrPath {
    AttrPath::attr(ATTRIBUTE)
        .attr_of("age_recipients")
        .index(index as i64)
}

/// Nowhere or two places for the snapshots, bad recipients, an empty
/// directory, a bad bucket: each at its path.
pub fn validate(config: &Value) -> Diagnostics {
    let mut found = Diagnostics::new();
    let backup = config.get(ATTRIBUTE);
    if backup.as_map().is_some()
        && backup.get("local_directory").is_null()
        && backup.get(BUCKET).is_null()
    {
        found.push(
            Diagnostic::error(
                "Nowhere for the etcd snapshots",
                "Set etcd_backup.local_directory (a local directory) or etcd_backup.bucket (an \
                 S3-compatible bucket).",
            )
            .at(AttrPath::attr(ATTRIBUTE)),
        );
    }
    if !backup.get("local_directory").is_null() && !backup.get(BUCKET).is_null() {
        found.push(
            Diagnostic::error(
                "etcd_backup.local_directory and etcd_backup.bucket both set",
                "Keep one: the snapshots go either to a local directory or to a bucket.",
            )
            .at(AttrPath::attr(ATTRIBUTE).attr_of(BUCKET)),
        );
    }
    if backup.get(BUCKET).is_wholly_known()
        && let Err(d) = bucket_config(config, "")
    {
        found.push(d);
    }
    let bucket_path = AttrPath::attr(ATTRIBUTE).attr_of(BUCKET);
    found.extend(s3_bucket::plain_http_warning(
        backup.get(BUCKET),
        &bucket_path,
    ));
    if let Some(dir) = backup.get("local_directory").as_str()
        && dir.trim().is_empty()
    {
        found.push(
            Diagnostic::error(
                "Empty etcd_backup.local_directory",
                "Name the directory the snapshots go to, e.g. \"${path.root}/etcd-snapshots\".",
            )
            .at(AttrPath::attr(ATTRIBUTE).attr_of("local_directory")),
        );
    }
    if let Some(list) = backup.get("age_recipients").as_list() {
        if list.is_empty() {
            found.push(
                Diagnostic::error(
                    "No age recipient",
                    "etcd_backup.age_recipients needs at least one `age1…` recipient: a \
                     snapshot holds every Secret of the cluster and is never written \
                     unencrypted. Make one with `age-keygen`.",
                )
                .at(AttrPath::attr(ATTRIBUTE).attr_of("age_recipients")),
            );
        }
        for (index, item) in list.iter().enumerate() {
            if let Some(text) = item.as_str()
                && let Err(e) = Recipients::parse(&[text])
            {
                found.push(
                    Diagnostic::error("Invalid age recipient", format!("{e}."))
                        .at(recipients_path(index)),
                );
            }
        }
    }
    found
}

/// Where `etcd_backup` (of `value`, set) keeps the snapshots of `cluster`,
/// and to whom they are encrypted.
pub fn destination(value: &Value, cluster: &str) -> Result<(Destination, Recipients), Diagnostic> {
    let backup = value.get(ATTRIBUTE);
    let recipients =
        Recipients::parse(&string_list(backup.get("age_recipients"))).map_err(|e| {
            Diagnostic::error("Invalid age recipient", format!("{e}."))
                .at(AttrPath::attr(ATTRIBUTE).attr_of("age_recipients"))
        })?;
    let bucket = bucket_config(value, cluster)?;
    let destination = match bucket {
        Some(config) => Destination::Bucket(crate::backup::Bucket::open(&config).map_err(|e| {
            Diagnostic::error("Cannot use the etcd snapshots' bucket", format!("{e}."))
                .at(AttrPath::attr(ATTRIBUTE).attr_of(BUCKET))
        })?),
        None => Destination::Directory(PathBuf::from(
            backup.get("local_directory").as_str().unwrap_or_default(),
        )),
    };
    Ok((destination, recipients))
}
