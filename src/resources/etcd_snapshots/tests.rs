use super::*;
use crate::backup::SnapshotFacts;

use crate::resources::s3_bucket::for_tests as bucket;

fn config(bucket: Value) -> Value {
    Value::object([
        ("cluster", Value::from("demo")),
        ("bucket", bucket),
        ("id", Value::Null),
        ("snapshots", Value::Null),
    ])
}

#[test]
fn the_bucket_is_checked_at_its_path_and_unknowns_pass() {
    let source = EtcdSnapshotsDataSource;
    assert!(source.validate(&config(bucket(&[]))).is_empty());
    assert!(
        source
            .validate(&config(bucket(&[("secret_key", Value::Unknown)])))
            .is_empty()
    );
    let found = source.validate(&config(bucket(&[("endpoint", Value::from("ftp://x"))])));
    let d = found.iter().next().expect("an error");
    assert_eq!(d.path.as_ref().unwrap().to_string(), "bucket.endpoint");
    assert_eq!(d.summary, "Invalid bucket.endpoint");
    let typed = bucket_config(&config(bucket(&[]))).unwrap().unwrap();
    assert_eq!(typed.prefix, "demo/");
}

#[test]
fn a_snapshot_shows_its_facts_or_nulls_without_them() {
    let with = Catalogued {
        location: "s3://backups/demo/x.etcd.age".into(),
        key: "demo/x.etcd.age".into(),
        bytes: 2048,
        last_modified: "2026-12-07T07:00:00.000Z".into(),
        facts: Some(SnapshotFacts {
            cluster: "demo".into(),
            secrets: "f".into(),
            taken_at: "2026-12-07T06:59:58Z".into(),
            node: "demo-cp-1".into(),
            bytes: 1900,
            talos_version: "v1.14.0".into(),
            kubernetes_version: None,
        }),
    };
    let shown = snapshot_value(&with);
    assert_eq!(shown.get("taken_at"), &Value::from("2026-12-07T06:59:58Z"));
    assert_eq!(shown.get("etcd_bytes"), &Value::from(1900));
    assert_eq!(shown.get("bytes"), &Value::from(2048));
    assert!(shown.get("kubernetes_version").is_null());
    let without = snapshot_value(&Catalogued {
        facts: None,
        ..with
    });
    assert!(without.get("node").is_null() && without.get("talos_version").is_null());
    assert_eq!(
        without.get("location"),
        &Value::from("s3://backups/demo/x.etcd.age")
    );
}

#[test]
fn bucket_names_follow_s3_and_dots_need_an_endpoint_of_ones_own() {
    let source = EtcdSnapshotsDataSource;
    for name in ["Backups", "ab", "a.b.c", "-backups", "backups-"] {
        let found = source.validate(&config(bucket(&[("name", Value::from(name))])));
        let d = found
            .iter()
            .next()
            .unwrap_or_else(|| panic!("{name} passed"));
        assert_eq!(
            d.path.as_ref().unwrap().to_string(),
            "bucket.name",
            "{name}"
        );
    }
    let dotted = bucket(&[
        ("name", Value::from("a.b.c")),
        ("endpoint", Value::from("https://s3.example.com")),
    ]);
    assert!(source.validate(&config(dotted)).is_empty());
}

#[test]
fn plain_http_off_this_machine_warns() {
    let source = EtcdSnapshotsDataSource;
    let at = |endpoint: &str| {
        let found = source.validate(&config(bucket(&[("endpoint", Value::from(endpoint))])));
        found.iter().map(|d| d.summary.clone()).collect::<Vec<_>>()
    };
    assert_eq!(
        at("http://s3.example.com"),
        ["bucket.endpoint is plain http"]
    );
    assert!(at("https://s3.example.com").is_empty());
    assert!(at("http://127.0.0.1:9000").is_empty());
    assert!(at("http://localhost:9000").is_empty());
}
