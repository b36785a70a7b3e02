//! The etcd snapshot before a risky change, and a cluster restored from
//! it, end to end: objects written through the kubeconfig, a change of the
//! control planes' configs, and the snapshot hct wrote before it, decrypted
//! with the test identity: the Talos API's stream (etcd's database, then
//! its SHA-256), holding those objects. Then every control-plane server
//! deleted, and an apply with `restore_from`: the objects read back, one
//! etcd of three members, the pools' nodes Ready, and an empty plan. On
//! hct-sim's real control plane it is the real etcd's bbolt database; with
//! `HCT_SIM_KUBERNETES=emulated` (the OpenTofu pass), hct-sim's stand-in
//! for one.

use crate::peers::kubectl::{
    apply_config_map, config_map_answer, kubeconfig_file, kubectl, ready_nodes, run,
};
use crate::support;
use crate::support::reference::{
    SNAPSHOT_IDENTITY, assert_etcd_snapshot, assert_restored, cni_tfvars, resource_values,
    snapshots, state_attribute, workspace,
};
use crate::support::sim::{talos_calls_count, talos_calls_since};

/// bbolt's magic, in each of a database's two meta pages (page 0 at 16).
const BBOLT_MAGIC: [u8; 4] = 0xED0C_DAEDu32.to_le_bytes();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_risky_change_writes_an_encrypted_snapshot_holding_the_clusters_objects_first() {
    let kubectl = kubectl();
    let sim = support::sim::start_with_real_kubernetes().await;
    let real = sim.runs_real_kubernetes();
    let ws = workspace(&sim);
    ws.write("cni.auto.tfvars.json", &cni_tfvars("stage: one"));
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        assert!(
            snapshots(&ws).is_empty(),
            "nothing at risk in a new cluster"
        );
        let cluster = resource_values(&ws, "hct_cluster.this");
        assert!(cluster["pre_change_snapshot"].is_null(), "none taken");
        let dir = tempfile::tempdir().unwrap();
        let path = kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir.path());
        apply_config_map(&kubectl, dir.path(), &path, "backup-probe", Some("42"));

        // A new manifest is a new config for every control plane.
        ws.write("cni.auto.tfvars.json", &cni_tfvars("stage: two"));
        let since = talos_calls_count(&sim);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply a new manifest");
        let snapshot_calls: Vec<String> = talos_calls_since(&sim, since, &["EtcdSnapshot"])
            .into_iter()
            .map(|c| c.node)
            .collect();
        assert_eq!(snapshot_calls.len(), 1, "{snapshot_calls:?}");
        assert!(
            snapshot_calls[0].starts_with("noreturn-cp-"),
            "{snapshot_calls:?}"
        );

        let found = snapshots(&ws);
        assert_eq!(found.len(), 1, "one snapshot");
        let (name, snapshot) = &found[0];
        assert_etcd_snapshot(snapshot);
        let key = b"/registry/configmaps/default/backup-probe";
        let holds = |needle: &[u8]| snapshot.windows(needle.len()).any(|w| w == needle);
        if real {
            assert_eq!(snapshot[16..20], BBOLT_MAGIC, "a bbolt database");
            assert!(
                holds(key),
                "the ConfigMap's key is in the real etcd's snapshot"
            );
        } else {
            assert!(
                holds(b"backup-probe"),
                "the ConfigMap is in the emulated store's"
            );
        }
        // Beside it, in the clear, whose it is.
        let facts: serde_json::Value = serde_json::from_slice(
            &std::fs::read(
                ws.path()
                    .join("etcd-snapshots")
                    .join(format!("{name}.json")),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(facts["cluster"], "noreturn", "{facts:#}");
        assert_eq!(facts["bytes"], snapshot.len() as u64, "{facts:#}");
        assert!(
            facts["node"].as_str().unwrap().starts_with("noreturn-cp-"),
            "{facts:#}"
        );
        assert_eq!(facts["talos_version"], "v1.14.0", "{facts:#}");
        let named = state_attribute(&ws, "hct_cluster.this", "pre_change_snapshot");
        assert!(
            named.ends_with(&format!("/etcd-snapshots/{name}")),
            "{named}"
        );
        // Owner-only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = std::fs::metadata(ws.path().join("etcd-snapshots").join(name)).unwrap();
            assert_eq!(file.permissions().mode() & 0o077, 0, "owner-only");
        }

        let (code, out) = support::plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");

        // An object made after the snapshot: a restore from it loses it.
        apply_config_map(&kubectl, dir.path(), &path, "after-snapshot", None);

        // Every control-plane server deleted: the cluster's etcd is gone.
        for n in 1..=3 {
            support::sim::delete_server(&sim, &format!("noreturn-cp-{n}"));
        }
        ws.write("identity.txt", &format!("{SNAPSHOT_IDENTITY}\n"));
        let restore = serde_json::json!({ "etcd_restore_from": {
            "snapshot": format!("etcd-snapshots/{name}"),
            "age_identity_file": "identity.txt",
        }});
        // Another key, not a recipient of the snapshot: refused at plan.
        ws.write(
            "wrong.txt",
            "AGE-SECRET-KEY-1WNPZRML9YHKETSC4SFZK0FL34W93DDXMRDP58F5LYPC5NVJVASVQ74X5Y0\n",
        );
        let mut wrong = restore.clone();
        wrong["etcd_restore_from"]["age_identity_file"] = "wrong.txt".into();
        ws.write("restore.auto.tfvars.json", &wrong.to_string());
        let out = ws.terraform(&["plan"]).expect_failure("a wrong identity");
        let words = support::unwrapped(&out.stderr);
        assert!(
            words.contains("Cannot open the snapshot to restore"),
            "{out}"
        );

        ws.write("restore.auto.tfvars.json", &restore.to_string());
        let since = talos_calls_count(&sim);
        // At trace level, the log names the restore but never the identity.
        let out = ws
            .command(&["apply", "-auto-approve"])
            .env("TF_LOG_PROVIDER", "TRACE")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "apply restoring etcd:\n{log}");
        assert!(log.contains("restoring etcd from the snapshot"), "{log}");
        assert!(
            !log.contains(SNAPSHOT_IDENTITY),
            "the identity is in the log"
        );
        let restored_on: Vec<(String, String)> =
            talos_calls_since(&sim, since, &["EtcdRecover", "Bootstrap"])
                .into_iter()
                .map(|c| (c.call, c.node))
                .collect();
        assert_eq!(
            restored_on,
            [
                ("EtcdRecover".to_string(), "noreturn-cp-1".to_string()),
                ("Bootstrap".to_string(), "noreturn-cp-1".to_string())
            ]
        );
        // The objects of before, through the new control planes.
        let path = kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir.path());
        assert_eq!(
            config_map_answer(&kubectl, dir.path(), &path, "backup-probe"),
            "42"
        );
        let later = run(
            &kubectl,
            dir.path(),
            &path,
            &["get", "configmap", "after-snapshot"],
        );
        assert!(
            !later.status.success() && String::from_utf8_lossy(&later.stderr).contains("NotFound"),
            "an object made after the snapshot is gone: {later:?}"
        );
        let snapshot_file = ws.path().join("etcd-snapshots").join(name);
        assert_restored(&sim, &ws, &snapshot_file, || {
            ready_nodes(&kubectl, dir.path(), &path)
        });
        let (code, out) = support::plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "restore_from left set changes nothing\n{out}");

        // restore_from still set, every control plane powered off, and a
        // change for them: they come back with their etcd. Nothing is
        // bootstrapped or restored again; the snapshot before the change is
        // taken once they run.
        let servers = support::sim::server_ids(&sim);
        for n in 1..=3 {
            support::sim::power_off_server(&sim, &format!("noreturn-cp-{n}"));
        }
        ws.write("cni.auto.tfvars.json", &cni_tfvars("stage: three"));
        let since = talos_calls_count(&sim);
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply with every control plane off");
        let etcd_calls: Vec<String> =
            talos_calls_since(&sim, since, &["EtcdRecover", "Bootstrap", "EtcdSnapshot"])
                .into_iter()
                .map(|c| c.call)
                .collect();
        assert_eq!(
            etcd_calls,
            ["EtcdSnapshot"],
            "no bootstrap, no second restore"
        );
        assert_eq!(support::sim::server_ids(&sim), servers, "the same servers");
        assert_eq!(
            config_map_answer(&kubectl, dir.path(), &path, "backup-probe"),
            "42"
        );

        // Every control-plane server lost again, restore_from still set:
        // the snapshot restored once is not restored again; etcd is lost.
        for n in 1..=3 {
            support::sim::delete_server(&sim, &format!("noreturn-cp-{n}"));
        }
        let since = talos_calls_count(&sim);
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_failure("every control plane lost again");
        assert!(
            support::unwrapped(&out.stderr).contains("The cluster's etcd is lost"),
            "{out}"
        );
        let sent: Vec<String> = talos_calls_since(&sim, since, &["EtcdRecover", "Bootstrap"])
            .into_iter()
            .map(|c| format!("{} {}", c.call, c.node))
            .collect();
        assert!(sent.is_empty(), "restored or bootstrapped again: {sent:?}");
    });
    sim.shutdown().await.unwrap();
}
