use super::*;
use crate::backup::Destination;
use crate::talos::Secrets;

const RECIPIENT: &str = "age1sxfzqgu7k66rpk87eccfvmg2dx8dzd774y8wk64rsahxteudn4zqr8vpz8";

fn node(name: &str, sha: Value) -> Value {
    Value::object([
        ("name", Value::from(name)),
        ("server_id", Value::from(1)),
        ("ip", Value::from("10.0.1.2")),
        ("config_sha256", sha),
    ])
}

fn cluster(talos: &str, sha: Value, taken: Value) -> Value {
    Value::object([
        ("talos_version", Value::from(talos)),
        (
            "control_plane",
            Value::object([("server_type", Value::from("cx23"))]),
        ),
        (NODES, Value::List(vec![node("c-cp-1", sha)])),
        (TAKEN, taken),
        (ATTRIBUTE, Value::Null),
        (SKIP, Value::Null),
    ])
}

fn backup(recipients: Vec<Value>) -> Value {
    Value::object([
        ("local_directory", Value::from("snapshots")),
        (BUCKET, Value::Null),
        ("age_recipients", Value::List(recipients)),
    ])
}

fn planned(prior: &Value, mut planned: Value) -> (Value, Diagnostics) {
    let mut found = Diagnostics::new();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(plan(
            prior,
            &mut planned,
            &CancellationToken::new(),
            &mut found,
        ));
    (planned, found)
}

#[test]
fn an_upgrade_with_nowhere_for_its_snapshot_is_refused_at_plan_naming_both_ways_out() {
    let prior = cluster("v1.14.0", Value::from("a"), Value::Null);
    let (_, found) = planned(&prior, cluster("v1.14.1", Value::from("b"), Value::Null));
    let error = found.iter().next().expect("refused");
    assert!(error.is_error());
    assert_eq!(error.path, Some(AttrPath::attr(ATTRIBUTE)));
    for words in [
        "c-cp-1 gets a new machine config",
        "a Talos upgrade from v1.14.0 to v1.14.1",
        "etcd_backup = {",
        "skip_pre_change_snapshot = true",
    ] {
        assert!(error.detail.contains(words), "{words}: {}", error.detail);
    }
}

#[test]
fn the_skip_a_store_or_no_risk_let_the_plan_through() {
    let prior = cluster("v1.14.0", Value::from("a"), Value::from("old.etcd.age"));
    let mut skip = cluster("v1.14.1", Value::from("b"), Value::Null);
    set(&mut skip, SKIP, Value::from(true));
    let (skipped, found) = planned(&prior, skip);
    assert!(found.is_empty());
    assert_eq!(skipped.get(TAKEN), &Value::from("old.etcd.age"), "kept");

    let mut store = cluster("v1.14.1", Value::from("b"), Value::Null);
    set(&mut store, ATTRIBUTE, backup(vec![Value::from(RECIPIENT)]));
    let (stored, found) = planned(&prior, store);
    assert!(found.is_empty());
    assert!(stored.get(TAKEN).is_unknown(), "the apply takes one");

    let (same, found) = planned(&prior, cluster("v1.14.0", Value::from("a"), Value::Null));
    assert!(found.is_empty());
    assert_eq!(same.get(TAKEN), &Value::from("old.etcd.age"));
    // Configs not known yet (the parallel form's worker_join changes):
    // refused too, unless skipped or stored.
    let (_, found) = planned(&prior, cluster("v1.14.0", Value::Unknown, Value::Null));
    let error = found.iter().next().expect("refused");
    assert!(
        error
            .detail
            .contains("may change, and are known only at apply"),
        "{}",
        error.detail
    );
    // So are nodes not known yet (the network plan comes with worker_join).
    let mut unknown = cluster("v1.14.0", Value::Null, Value::Null);
    set(&mut unknown, NODES, Value::Unknown);
    let (_, found) = planned(&prior, unknown);
    let error = found.iter().next().expect("refused");
    assert!(!error.detail.contains("leaves"), "{}", error.detail);
    // A new cluster has nothing at risk.
    let (new, found) = planned(
        &Value::Null,
        cluster("v1.14.1", Value::from("b"), Value::Null),
    );
    assert!(found.is_empty() && new.get(TAKEN).is_null());
}

#[test]
fn recipients_and_the_directory_are_checked_at_their_paths() {
    let mut config = cluster("v1.14.0", Value::from("a"), Value::Null);
    set(
        &mut config,
        ATTRIBUTE,
        backup(vec![
            Value::from(RECIPIENT),
            Value::from("age1nope"),
            Value::Unknown,
        ]),
    );
    let found = validate(&config);
    let paths: Vec<String> = found
        .iter()
        .map(|d| d.path.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(paths, ["etcd_backup.age_recipients[1]"]);
    assert!(rule(&config).is_err());

    set(&mut config, ATTRIBUTE, backup(vec![]));
    let found = validate(&config);
    assert_eq!(found.iter().next().unwrap().summary, "No age recipient");

    set(&mut config, ATTRIBUTE, backup(vec![Value::from(RECIPIENT)]));
    assert!(validate(&config).is_empty());
    assert!(matches!(
        rule(&config),
        Ok(SnapshotRule::Store { destination: Destination::Directory(directory), .. })
            if directory == std::path::Path::new("snapshots")
    ));
}

fn bucket(fields: &[(&str, &str)]) -> Value {
    let fields: Vec<(&str, Value)> = fields.iter().map(|(n, v)| (*n, Value::from(*v))).collect();
    let bucket = s3_bucket::for_tests(&fields);
    let mut backup = backup(vec![Value::from(RECIPIENT)]);
    set(&mut backup, "local_directory", Value::Null);
    set(&mut backup, BUCKET, bucket);
    backup
}

#[test]
fn a_bucket_is_hetzners_unless_named_and_prefixed_with_the_cluster() {
    let mut config = cluster("v1.14.0", Value::Null, Value::Null);
    set(&mut config, "name", Value::from("demo"));
    set(&mut config, ATTRIBUTE, bucket(&[]));
    assert!(validate(&config).is_empty());
    let typed = bucket_config(&config).unwrap().unwrap();
    assert_eq!(
        typed.endpoint.as_str(),
        "https://fsn1.your-objectstorage.com/"
    );
    assert_eq!(
        (typed.region.as_str(), typed.prefix.as_str()),
        ("fsn1", "demo/")
    );
    assert!(!typed.path_style, "Hetzner's buckets are virtual-hosted");
    assert_eq!(typed.access_key.expose(), "AKID");
    assert!(matches!(
        rule(&config),
        Ok(SnapshotRule::Store {
            destination: Destination::Bucket(_),
            ..
        })
    ));

    set(
        &mut config,
        ATTRIBUTE,
        bucket(&[
            ("location", "hel1"),
            ("endpoint", "http://127.0.0.1:9000"),
            ("prefix", ""),
        ]),
    );
    let typed = bucket_config(&config).unwrap().unwrap();
    assert_eq!(typed.endpoint.as_str(), "http://127.0.0.1:9000/");
    assert_eq!((typed.region.as_str(), typed.prefix.as_str()), ("hel1", ""));
    assert!(typed.path_style, "a named endpoint is asked path-style");
}

#[test]
fn a_bucket_and_a_directory_are_one_or_the_other_and_keys_are_named() {
    let mut config = cluster("v1.14.0", Value::Null, Value::Null);
    let mut both = bucket(&[]);
    set(&mut both, "local_directory", Value::from("snapshots"));
    set(&mut config, ATTRIBUTE, both);
    let found = validate(&config);
    assert_eq!(
        found
            .iter()
            .next()
            .map(|d| d.path.as_ref().unwrap().to_string()),
        Some("etcd_backup.bucket".to_string())
    );

    let mut neither = backup(vec![Value::from(RECIPIENT)]);
    set(&mut neither, "local_directory", Value::Null);
    set(&mut config, ATTRIBUTE, neither);
    assert_eq!(
        validate(&config).iter().next().unwrap().summary,
        "Nowhere for the etcd snapshots"
    );

    for (field, value, path) in [
        ("secret_key", "", "etcd_backup.bucket.secret_key"),
        ("endpoint", "s3.example.com", "etcd_backup.bucket.endpoint"),
    ] {
        set(&mut config, ATTRIBUTE, bucket(&[(field, value)]));
        let found = validate(&config);
        let d = found.iter().next().expect("an error");
        assert_eq!(d.path.as_ref().unwrap().to_string(), path);
        assert!(
            !d.detail.contains("SECRET") && !d.detail.contains("AKID"),
            "{}",
            d.detail
        );
    }
}

#[test]
fn state_names_the_snapshot_taken_else_the_one_before() {
    let prior = cluster("v1.14.0", Value::from("a"), Value::from("old.etcd.age"));
    let record_of = |planned: Value, log: &SnapshotLog| {
        let mut state = prior.clone();
        set(&mut state, TAKEN, planned);
        let mut found = Diagnostics::new();
        record(&prior, &mut state, log, &mut found);
        (state, found)
    };
    let (state, found) = record_of(Value::from("old.etcd.age"), &SnapshotLog::default());
    assert_eq!(state.get(TAKEN), &Value::from("old.etcd.age"));
    assert!(found.is_empty() && state.get(RESTORED).is_null());
    let log = SnapshotLog::default();
    log.taken.set("snapshots/new.etcd.age".to_string()).unwrap();
    log.restored.set("sha256:ab".to_string()).unwrap();
    let (state, found) = record_of(Value::Unknown, &log);
    assert_eq!(state.get(TAKEN), &Value::from("snapshots/new.etcd.age"));
    assert_eq!(state.get(RESTORED), &Value::from("sha256:ab"));
    assert!(found.is_empty());
    // Not foreseen by the plan: the planned value stays, a warning names it.
    let (state, found) = record_of(Value::from("old.etcd.age"), &log);
    assert_eq!(state.get(TAKEN), &Value::from("old.etcd.age"));
    let warning = found.iter().next().unwrap();
    assert!(
        warning.detail.contains("snapshots/new.etcd.age"),
        "{}",
        warning.detail
    );
}

#[test]
fn restore_from_is_refused_where_control_planes_exist_and_checked_when_new() {
    let restore = |snapshot: &str| {
        Value::object([
            ("snapshot", Value::from(snapshot)),
            ("age_identity_file", Value::from("/nonexistent/key.txt")),
        ])
    };
    let mut live = cluster("v1.14.0", Value::from("a"), Value::Null);
    set(&mut live, RESTORE, Value::Null);
    let mut asked = live.clone();
    set(&mut asked, RESTORE, restore("/nonexistent/a.etcd.age"));
    let (_, found) = planned(&live, asked.clone());
    let summaries: Vec<&str> = found.iter().map(|d| d.summary.as_str()).collect();
    assert_eq!(
        summaries,
        [
            "Cannot open the snapshot to restore",
            "restore_from on a cluster whose control planes exist"
        ]
    );
    let exists = found.iter().nth(1).unwrap();
    assert!(
        exists
            .detail
            .contains("These control planes exist: c-cp-1."),
        "{}",
        exists.detail
    );
    // Left set after the restore: nothing to say.
    let (_, found) = planned(&asked, asked.clone());
    assert!(found.is_empty());
    // Every control plane gone: only the snapshot is checked.
    let mut gone = live.clone();
    set(&mut gone, NODES, Value::List(vec![]));
    let (_, found) = planned(&gone, asked);
    assert_eq!(found.iter().count(), 1);
}

#[test]
fn a_snapshot_of_another_cluster_is_refused_at_plan() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("other.etcd.age");
    crate::backup::SnapshotFacts {
        cluster: "other".into(),
        secrets: "0123456789abcdef".into(),
        taken_at: "2026-12-07T04:50:12Z".into(),
        node: "other-cp-1".into(),
        bytes: 42,
        talos_version: "v1.14.0".into(),
        kubernetes_version: None,
    }
    .write(&snapshot)
    .unwrap();
    let secrets = Secrets::for_checking().unwrap();
    let mut asked = cluster("v1.14.0", Value::from("a"), Value::Null);
    set(&mut asked, NODES, Value::List(vec![]));
    set(
        &mut asked,
        "machine_secrets",
        Value::from(secrets.to_yaml()),
    );
    set(
        &mut asked,
        RESTORE,
        Value::object([
            ("snapshot", Value::from(snapshot.display().to_string())),
            ("age_identity_file", Value::from("/nonexistent/key.txt")),
        ]),
    );
    let (_, found) = planned(&Value::Null, asked);
    let foreign = found
        .iter()
        .find(|d| d.summary == "restore_from: a snapshot of another cluster")
        .expect("refused");
    assert!(
        foreign
            .detail
            .contains("of cluster other (secrets 0123456789abcdef)"),
        "{}",
        foreign.detail
    );
    assert_eq!(
        foreign.path,
        Some(AttrPath::attr(RESTORE).attr_of("snapshot"))
    );
}

#[test]
fn the_bucket_keys_and_the_ccm_token_are_the_clusters_write_only_attributes() {
    let paths = crate::resources::cluster::schema::schema().write_only_paths();
    let paths: Vec<String> = paths.iter().map(|p| p.join(".")).collect();
    assert_eq!(
        paths,
        [
            "ccm_token_wo",
            "etcd_backup.bucket.access_key",
            "etcd_backup.bucket.secret_key"
        ]
    );
}
