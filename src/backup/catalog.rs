//! The snapshots a bucket holds under its prefix, newest first, each with
//! the facts hct wrote beside it (`<key>.json`), when there are.

use super::{BackupError, Bucket, Listed, SnapshotFacts};

/// The name every snapshot's key ends with.
pub const SNAPSHOT_SUFFIX: &str = ".etcd.age";

/// A snapshot in the bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalogued {
    /// `s3://<bucket>/<key>`, as `restore_from.snapshot` takes it.
    pub location: String,
    pub key: String,
    /// The encrypted object's size.
    pub bytes: u64,
    pub last_modified: String,
    /// None for a snapshot without facts, or facts hct cannot read.
    pub facts: Option<SnapshotFacts>,
}

impl Catalogued {
    /// When it was taken (its facts), else when it was stored.
    fn time(&self) -> &str {
        self.facts
            .as_ref()
            .map_or(self.last_modified.as_str(), |f| f.taken_at.as_str())
    }
}

/// The snapshots among `listed` (the bucket's objects under its prefix),
/// newest first; snapshots whose facts name another cluster than `cluster`
/// are left out.
pub async fn snapshots(
    bucket: &Bucket,
    listed: &[Listed],
    cluster: &str,
) -> Result<Vec<Catalogued>, BackupError> {
    let mut found = Vec::new();
    for object in listed.iter().filter(|o| o.key.ends_with(SNAPSHOT_SUFFIX)) {
        let facts_key = format!("{}.json", object.key);
        let facts = if listed.iter().any(|o| o.key == facts_key) {
            bucket
                .get(&facts_key)
                .await?
                .and_then(|bytes| serde_json::from_slice::<SnapshotFacts>(&bytes).ok())
        } else {
            None
        };
        if facts.as_ref().is_some_and(|f| f.cluster != cluster) {
            continue;
        }
        found.push(Catalogued {
            location: bucket.location(&object.key),
            key: object.key.clone(),
            bytes: object.bytes,
            last_modified: object.last_modified.clone(),
            facts,
        });
    }
    // RFC 3339 in UTC sorts by time.
    found.sort_by(|a, b| b.time().cmp(a.time()).then_with(|| b.key.cmp(&a.key)));
    Ok(found)
}
