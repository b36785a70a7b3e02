//! `hct_etcd_snapshots` (data source): the etcd snapshots of a cluster in
//! a bucket, newest first, with what their facts say (when taken, from
//! which node, the releases the cluster ran): where to pick the
//! `restore_from.snapshot` of a restore.

use std::path::Path;

use async_trait::async_trait;

use crate::backup::{self, Bucket, Catalogued};
use crate::provider::{Context, DataSource};
use crate::resources::s3_bucket::{self, Keys};
use crate::resources::values::set;
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Mode, Nesting, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_etcd_snapshots";

pub struct EtcdSnapshotsDataSource;

fn snapshot_attributes() -> Vec<Attribute> {
    vec![
        Attribute::computed("location", Type::String)
            .description("`s3://<bucket>/<key>`: what `restore_from.snapshot` takes."),
        Attribute::computed("key", Type::String).description("The object's key."),
        Attribute::computed("bytes", Type::Number)
            .description("The encrypted object's size in bytes."),
        Attribute::computed("last_modified", Type::String)
            .description("When the bucket stored it, as the server says (RFC 3339)."),
        Attribute::computed("taken_at", Type::String)
            .description("When it was taken (UTC, RFC 3339); null without facts."),
        Attribute::computed("node", Type::String)
            .description("The control plane it was taken from; null without facts."),
        Attribute::computed("etcd_bytes", Type::Number)
            .description("etcd's bytes before encryption; null without facts."),
        Attribute::computed("talos_version", Type::String)
            .description("The Talos release its control plane ran; null without facts."),
        Attribute::computed("kubernetes_version", Type::String).description(
            "The Kubernetes release `hct_cluster` named when it was taken (before a Kubernetes \
             upgrade, already the new one); null without facts or when unset.",
        ),
    ]
}

fn bucket_path() -> AttrPath {
    AttrPath::attr(s3_bucket::ATTRIBUTE)
}

fn bucket_config(config: &Value) -> Result<Option<backup::BucketConfig>, Diagnostic> {
    s3_bucket::config(
        config.get(s3_bucket::ATTRIBUTE),
        config.get("cluster").as_str().unwrap_or_default(),
        &bucket_path(),
    )
}

/// One snapshot as the data source shows it.
fn snapshot_value(found: &Catalogued) -> Value {
    let facts = found.facts.as_ref();
    let text = |f: fn(&backup::SnapshotFacts) -> Option<&str>| {
        facts.and_then(f).map_or(Value::Null, Value::from)
    };
    Value::object([
        ("location", Value::from(found.location.as_str())),
        ("key", Value::from(found.key.as_str())),
        ("bytes", Value::from(found.bytes as i64)),
        ("last_modified", Value::from(found.last_modified.as_str())),
        ("taken_at", text(|f| Some(f.taken_at.as_str()))),
        ("node", text(|f| Some(f.node.as_str()))),
        (
            "etcd_bytes",
            facts.map_or(Value::Null, |f| Value::from(f.bytes as i64)),
        ),
        ("talos_version", text(|f| Some(f.talos_version.as_str()))),
        (
            "kubernetes_version",
            text(|f| f.kubernetes_version.as_deref()),
        ),
    ])
}

#[async_trait]
impl DataSource for EtcdSnapshotsDataSource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        Schema::new(
            0,
            "The etcd snapshots of a cluster that hct keeps in a bucket (`hct_cluster`'s \
             `etcd_backup.bucket`), newest first: each with its `location` for \
             `restore_from.snapshot` and what hct wrote of it beside it (when it was taken, from \
             which control plane, the Talos and Kubernetes releases). Snapshots whose facts name \
             another cluster are left out. See docs/guides/backup-and-restore.md.",
        )
        .attribute(Attribute::required("cluster", Type::String).description(
            "The cluster's name (`hct_cluster.name`): the default prefix is `<cluster>/`.",
        ))
        .attribute(
            Attribute::nested(
                s3_bucket::ATTRIBUTE,
                Mode::Required,
                Nesting::Single,
                s3_bucket::attributes(Keys::Sensitive),
            )
            .description(
                "The bucket, as in `hct_cluster.etcd_backup.bucket`; its keys are sensitive here \
                 (Terraform has no write-only arguments for data sources), so they are in this \
                 data source's state: prefer a key pair that may only read the bucket.",
            ),
        )
        .attribute(
            Attribute::optional("age_identity_file", Type::String).description(
                "A file with an age identity of `etcd_backup.age_recipients` (`age-keygen`'s \
             output): with it, `machine_secrets` holds the cluster's newest machine secrets \
             from the bucket, decrypted. Only its path is in state.",
            ),
        )
        .attribute(
            Attribute::computed("machine_secrets", Type::String)
                .sensitive()
                .description(
                    "The cluster's `secrets.yaml` as hct kept it beside the snapshots (the newest \
             version), decrypted with `age_identity_file`; null without one or when the bucket \
             holds none. After a lost state: `machine_secrets = \
             data.hct_etcd_snapshots.<name>.machine_secrets` on `hct_cluster_secrets` (or \
             `hct_cluster`), then import (docs/guides/recovery.md).",
                ),
        )
        .attribute(
            Attribute::computed("machine_secrets_location", Type::String)
                .description("`s3://<bucket>/<key>` of the secrets in `machine_secrets`."),
        )
        .attribute(
            Attribute::computed("id", Type::String)
                .description("`s3://<bucket>/<prefix>`: where the snapshots were listed."),
        )
        .attribute(
            Attribute::nested(
                "snapshots",
                Mode::Computed,
                Nesting::List,
                snapshot_attributes(),
            )
            .description("The snapshots, newest first."),
        )
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let mut found = Diagnostics::new();
        if config.get(s3_bucket::ATTRIBUTE).is_wholly_known()
            && config.get("cluster").is_wholly_known()
            && let Err(d) = bucket_config(config)
        {
            found.push(d);
        }
        let bucket = config.get(s3_bucket::ATTRIBUTE);
        found.extend(s3_bucket::plain_http_warning(bucket, &bucket_path()));
        found
    }

    async fn read(&self, ctx: &Context, config: &Value) -> (Option<Value>, Diagnostics) {
        let stopped = || {
            let d = Diagnostic::error(
                "Stopped",
                "Terraform stopped the provider while it read the bucket.",
            );
            (None, d.into())
        };
        ctx.cancel
            .run_until_cancelled(read_bucket(config))
            .await
            .unwrap_or_else(stopped)
    }
}

/// The data source's state: the bucket's snapshots, and the secrets when
/// there is an identity.
async fn read_bucket(config: &Value) -> (Option<Value>, Diagnostics) {
    let bucket = match bucket_config(config) {
        Ok(Some(typed)) => Bucket::open(&typed),
        Ok(None) => return (None, Diagnostics::new()),
        Err(d) => return (None, d.into()),
    };
    let bucket = match bucket {
        Ok(bucket) => bucket,
        Err(e) => return (None, cannot_read(e)),
    };
    let cluster = config.get("cluster").as_str().unwrap_or_default();
    let listed = match bucket.list().await {
        Ok(listed) => listed,
        Err(e) => return (None, cannot_read(e)),
    };
    let found = match backup::snapshots(&bucket, &listed, cluster).await {
        Ok(found) => found,
        Err(e) => return (None, cannot_read(e)),
    };
    let secrets = match config.get("age_identity_file").as_str() {
        None => None,
        Some(identity) => {
            match backup::latest_secrets(&bucket, &listed, cluster, Path::new(identity)).await {
                Ok(secrets) => secrets,
                Err(e) => {
                    let d = Diagnostic::error(
                        "Cannot read the machine secrets in the bucket",
                        format!("{e}."),
                    )
                    .at(AttrPath::attr("age_identity_file"));
                    return (None, d.into());
                }
            }
        }
    };
    let (location, yaml) = secrets.unzip();
    let mut state = config.clone();
    set(
        &mut state,
        "id",
        Value::from(bucket.location(&bucket.key(""))),
    );
    set(
        &mut state,
        "snapshots",
        Value::List(found.iter().map(snapshot_value).collect()),
    );
    set(&mut state, "machine_secrets", Value::from(yaml));
    set(
        &mut state,
        "machine_secrets_location",
        Value::from(location),
    );
    (Some(state), Diagnostics::new())
}

fn cannot_read(e: backup::BackupError) -> Diagnostics {
    Diagnostic::error("Cannot list the etcd snapshots", format!("{e}."))
        .at(bucket_path())
        .into()
}

#[cfg(test)]
mod tests;
