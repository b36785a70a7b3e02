//! etcd snapshots in an S3-compatible bucket, end to end against a real S3
//! server (Versity's gateway, which checks every request's SigV4
//! signature): a risky change puts the snapshot and its facts into the
//! bucket, encrypted to the test recipient; wrong keys fail the plan; the keys (write-only) are in no
//! state, plan, log at trace level, user data or machine config; and every
//! `hct_etcd_snapshots` lists it; the machine secrets are there from the
//! first apply, and with them a lost state is imported back; and every
//! control-plane server deleted,
//! `restore_from = "s3://…"` brings the cluster's objects back.

use std::io::Read;
use std::str::FromStr;

use crate::peers::kubectl::{
    apply_config_map, config_map_answer, kubeconfig_file, kubectl, ready_nodes,
};
use crate::support;
use crate::support::reference::{
    SNAPSHOT_IDENTITY, assert_etcd_snapshot, assert_restored, cni_tfvars, import_reference,
    state_attribute, workspace,
};
use crate::support::s3::{ACCESS_KEY, S3Server, SECRET_KEY};
use crate::support::sim::{talos_calls_count, talos_calls_since};

const BUCKET: &str = "hct-backups";

fn decrypt(path: &std::path::Path) -> Vec<u8> {
    let identity = age::x25519::Identity::from_str(SNAPSHOT_IDENTITY).unwrap();
    let decryptor = age::Decryptor::new(std::fs::File::open(path).unwrap()).expect("an age file");
    let mut plain = Vec::new();
    decryptor
        .decrypt(std::iter::once(&identity as &dyn age::Identity))
        .expect("encrypted to the test key")
        .read_to_end(&mut plain)
        .unwrap();
    plain
}

/// The example's bucket variables for the test server, with `secret`.
fn bucket_tfvars(s3: &S3Server, secret: &str) -> String {
    serde_json::json!({
        "etcd_snapshot_bucket": { "name": BUCKET, "endpoint": s3.endpoint },
        "etcd_snapshot_bucket_keys": { "access_key": ACCESS_KEY, "secret_key": secret },
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_go_to_the_bucket_encrypted_and_a_cluster_comes_back_from_one() {
    let kubectl = kubectl();
    let sim = support::sim::start_with_real_kubernetes().await;
    let s3 = S3Server::start(BUCKET).await;
    let ws = workspace(&sim);
    let bucket = |secret: &str| bucket_tfvars(&s3, secret);
    ws.write("bucket.auto.tfvars.json", &bucket(SECRET_KEY));
    ws.write("cni.auto.tfvars.json", &cni_tfvars("stage: one"));
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        // No snapshot (nothing at risk yet), but the machine secrets,
        // encrypted to the same recipient.
        let secrets = state_attribute(&ws, "hct_cluster_secrets.this", "machine_secrets");
        let objects = s3.objects(BUCKET, "");
        assert_eq!(objects.len(), 1, "{objects:?}");
        let (secrets_key, secrets_file) = &objects[0];
        assert!(
            secrets_key.starts_with("noreturn/noreturn-machine-secrets-")
                && secrets_key.ends_with(".yaml.age"),
            "{secrets_key}"
        );
        assert_eq!(String::from_utf8(decrypt(secrets_file)).unwrap(), secrets);
        let dir = tempfile::tempdir().unwrap();
        let path = kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir.path());
        apply_config_map(&kubectl, dir.path(), &path, "bucket-probe", Some("42"));

        // Keys the server refuses: the plan fails (the change needs a
        // snapshot), no control plane gets its new config, and the error
        // names the bucket and the server's answer, not the key.
        ws.write("cni.auto.tfvars.json", &cni_tfvars("stage: two"));
        ws.write("bucket.auto.tfvars.json", &bucket("not-the-secret-key"));
        let since = talos_calls_count(&sim);
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("wrong bucket keys");
        let words = support::unwrapped(&out.stderr);
        assert!(
            words.contains("Cannot use the etcd snapshots' bucket"),
            "{out}"
        );
        assert!(words.contains(&format!("bucket \"{BUCKET}\"")), "{out}");
        assert!(words.contains("SignatureDoesNotMatch"), "{out}");
        for key in [ACCESS_KEY, "not-the-secret-key"] {
            assert!(!out.stderr.contains(key), "a key in the error: {out}");
        }
        assert!(
            talos_calls_since(&sim, since, &["ApplyConfiguration"]).is_empty(),
            "no control plane changed"
        );
        assert_eq!(
            s3.objects(BUCKET, "").len(),
            1,
            "nothing kept but the secrets"
        );

        // The right keys: at trace level, no key in the log.
        ws.write("bucket.auto.tfvars.json", &bucket(SECRET_KEY));
        let out = ws
            .command(&["apply", "-auto-approve"])
            .env("TF_LOG", "TRACE")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "apply with the bucket:\n{log}");
        for key in [ACCESS_KEY, SECRET_KEY] {
            assert!(!log.contains(key), "a bucket key is in the trace log");
        }
        let objects: Vec<_> = s3
            .objects(BUCKET, "noreturn/")
            .into_iter()
            .filter(|(key, _)| key != secrets_key)
            .collect();
        let names: Vec<&str> = objects.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names.len(), 2, "the snapshot and its facts: {names:?}");
        let (key, file) = &objects[0];
        assert!(key.ends_with("-pre-change.etcd.age"), "{key}");
        assert_eq!(objects[1].0, format!("{key}.json"));
        let snapshot = decrypt(file);
        assert_etcd_snapshot(&snapshot);
        assert!(
            snapshot
                .windows(b"bucket-probe".len())
                .any(|w| w == b"bucket-probe"),
            "the ConfigMap is in the snapshot"
        );
        let facts: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&objects[1].1).unwrap()).unwrap();
        assert_eq!(facts["cluster"], "noreturn", "{facts:#}");
        assert_eq!(facts["bytes"], snapshot.len() as u64, "{facts:#}");
        let location = format!("s3://{BUCKET}/{key}");
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "pre_change_snapshot"),
            location
        );
        assert!(
            !ws.path().join("etcd-snapshots").exists(),
            "nothing written locally"
        );

        // The keys are nowhere but the configuration.
        let state = ws.read("terraform.tfstate");
        for key in [ACCESS_KEY, SECRET_KEY] {
            assert!(!state.contains(key), "a bucket key is in state");
        }
        let kept: Vec<String> = sim.inspect(|w| {
            support::sim::cluster_servers(w)
                .flat_map(|s| {
                    let config = s
                        .talos
                        .as_ref()
                        .and_then(|t| t.node.disk.config.as_ref())
                        .map(|c| c.text.expose().to_string());
                    [s.user_data.clone(), config]
                })
                .flatten()
                .collect()
        });
        assert!(!kept.is_empty());
        for text in &kept {
            for key in [ACCESS_KEY, SECRET_KEY] {
                assert!(!text.contains(key), "a bucket key in user data or a config");
            }
        }
        // The data source lists it, with its facts.
        ws.write(
            "snapshots.tf",
            r#"
data "hct_etcd_snapshots" "this" {
  cluster = hct_cluster.this.name
  bucket  = merge(var.etcd_snapshot_bucket, var.etcd_snapshot_bucket_keys)
}

output "etcd_snapshots" {
  value = data.hct_etcd_snapshots.this.snapshots
}
"#,
        );
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply reading the data source");
        let listed = ws.outputs()["etcd_snapshots"]["value"].clone();
        let listed = listed.as_array().expect("a list");
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0]["location"], location.as_str());
        assert_eq!(listed[0]["etcd_bytes"], snapshot.len() as u64);
        assert_eq!(listed[0]["taken_at"], facts["taken_at"]);
        assert_eq!(listed[0]["talos_version"], "v1.14.0");
        assert_eq!(
            listed[0]["bytes"],
            std::fs::metadata(file).unwrap().len(),
            "the encrypted object's size"
        );
        let (code, out) = support::plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");

        // State lost: the secrets come back from the bucket (the data
        // source decrypts them), the cluster is imported, nothing is
        // replaced, and the plan after one apply is empty.
        let servers = support::sim::server_ids(&sim);
        let image = state_attribute(&ws, "hct_talos_image.this", "id");
        std::fs::remove_file(ws.path().join("terraform.tfstate")).unwrap();
        ws.write("identity.txt", &format!("{SNAPSHOT_IDENTITY}\n"));
        ws.write(
            "snapshots.tf",
            r#"
data "hct_etcd_snapshots" "this" {
  cluster           = "noreturn"
  bucket            = merge(var.etcd_snapshot_bucket, var.etcd_snapshot_bucket_keys)
  age_identity_file = "identity.txt"
}
"#,
        );
        ws.write(
            "secrets_override.tf",
            r#"
resource "hct_cluster_secrets" "this" {
  machine_secrets = data.hct_etcd_snapshots.this.machine_secrets
}
"#,
        );
        let (since, deletes) = (
            talos_calls_count(&sim),
            support::sim::requests_of(&sim, "DELETE /servers/{id}"),
        );
        import_reference(&ws, &image);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after the import");
        assert_eq!(support::sim::server_ids(&sim), servers, "the same servers");
        // The running cluster is adopted: from the sim's own logs, no
        // server deleted and etcd neither bootstrapped nor restored.
        assert_eq!(
            support::sim::requests_of(&sim, "DELETE /servers/{id}"),
            deletes,
            "no delete sent"
        );
        assert!(
            talos_calls_since(&sim, since, &["Bootstrap", "EtcdRecover"]).is_empty(),
            "no bootstrap after the import"
        );
        assert_eq!(
            state_attribute(&ws, "hct_cluster_secrets.this", "machine_secrets"),
            secrets
        );
        let (code, out) = support::plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");

        // Every control-plane server deleted; restored from the bucket.
        for n in 1..=3 {
            support::sim::delete_server(&sim, &format!("noreturn-cp-{n}"));
        }
        ws.write(
            "restore.auto.tfvars.json",
            &serde_json::json!({ "etcd_restore_from": {
                "snapshot": location,
                "age_identity_file": "identity.txt",
            }})
            .to_string(),
        );
        let since = talos_calls_count(&sim);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply restoring etcd from the bucket");
        let restored_on: Vec<String> = talos_calls_since(&sim, since, &["EtcdRecover"])
            .into_iter()
            .map(|c| c.node)
            .collect();
        assert_eq!(restored_on, ["noreturn-cp-1"]);
        let path = kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir.path());
        assert_eq!(
            config_map_answer(&kubectl, dir.path(), &path, "bucket-probe"),
            "42"
        );
        assert_restored(&sim, &ws, file, || ready_nodes(&kubectl, dir.path(), &path));
        let (code, out) = support::plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "restore_from left set changes nothing\n{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_talos_upgrade_puts_its_snapshot_in_the_bucket_before_any_node_goes_down() {
    let sim = support::sim::start().await;
    let s3 = S3Server::start(BUCKET).await;
    let ws = workspace(&sim);
    ws.write("bucket.auto.tfvars.json", &bucket_tfvars(&s3, SECRET_KEY));
    tokio::task::block_in_place(|| {
        let v1_13 = ["-var", "talos_version=v1.13.9"];
        ws.terraform(&[&["apply", "-auto-approve"], &v1_13[..]].concat())
            .expect_success("apply v1.13.9");
        let upgrade = ["-var", "talos_version=v1.14.0"];
        let log = support::apply_with_provider_log(&ws, &upgrade, "the upgrade");
        let kept = log.find("etcd snapshot kept").expect("kept");
        let first_upgrade = log.find("upgrading Talos").expect("upgraded");
        assert!(kept < first_upgrade, "the snapshot comes first\n{log}");
        let snapshots: Vec<_> = s3
            .objects(BUCKET, "noreturn/")
            .into_iter()
            .filter(|(key, _)| key.ends_with("-pre-change.etcd.age"))
            .collect();
        assert_eq!(snapshots.len(), 1, "{snapshots:?}");
        let (key, file) = &snapshots[0];
        assert_etcd_snapshot(&decrypt(file));
        let facts = s3
            .objects(BUCKET, &format!("{key}.json"))
            .pop()
            .expect("its facts");
        let facts: serde_json::Value =
            serde_json::from_slice(&std::fs::read(facts.1).unwrap()).unwrap();
        assert_eq!(facts["talos_version"], "v1.13.9", "taken before: {facts:#}");
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "pre_change_snapshot"),
            format!("s3://{BUCKET}/{key}")
        );
        let (code, out) = support::plan_exit_code(&ws, &upgrade);
        assert_eq!(code, 0, "{out}");
    });
}
