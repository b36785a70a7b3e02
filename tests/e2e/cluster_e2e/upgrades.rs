//! Talos upgrades (v1.11 → v1.12 → v1.13 → v1.14, and one stopped half
//! way), clusters born on v1.13 and v1.14, and a new server type: in place,
//! one node at a time.

use super::*;

/// Applies `upgrade` (a newer `talos_version`) to the reference cluster on
/// Talos `to`'s releases and checks it went as hct promises: planned as an
/// in-place update; afterwards every node on `to`, the same servers, the
/// same Kubernetes version; one node at a time in each group, the control
/// plane first (Terraform applies the two pools side by side), seen both in
/// hct's log and in the sim's own timeline of its nodes. Before any node
/// goes down, an etcd snapshot is written, encrypted, and named in state.
fn upgrade_in_place(sim: &SimHandle, ws: &Workspace, upgrade: &[&str], to: &str) {
    let kubernetes = state_attribute(ws, "hct_cluster.this", "kubernetes_version");
    let snapshots_before = snapshots(ws).len();
    let ids = server_ids(sim);
    let (code, out) = plan_exit_code(ws, upgrade);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.stdout
            .contains("hct_cluster.this will be updated in-place"),
        "{out}"
    );
    let mut events = sim.events();
    let starts_before = talos_starts(sim);
    let log = apply_with_provider_log(ws, upgrade, "upgrade");
    let timeline = talos_timeline(&mut events);

    let snapshots = snapshots(ws);
    assert_eq!(snapshots.len(), snapshots_before + 1, "{snapshots:?}");
    let (name, snapshot) = snapshots.last().expect("a snapshot");
    assert!(
        name.starts_with("noreturn-") && name.ends_with("-pre-change.etcd.age"),
        "{name}"
    );
    assert_etcd_snapshot(snapshot);
    let named = state_attribute(ws, "hct_cluster.this", "pre_change_snapshot");
    assert!(
        named.ends_with(&format!("etcd-snapshots/{name}")),
        "{named}"
    );
    let written = log.find("etcd snapshot kept").expect("logged");
    let first_upgrade = log.find("upgrading Talos").expect("upgraded");
    assert!(written < first_upgrade, "the snapshot comes first\n{log}");

    assert!(
        releases(sim).values().all(|r| r == to),
        "{:?}",
        releases(sim)
    );
    assert_eq!(server_ids(sim), ids, "upgraded in place, same servers");
    // An upgrade of Talos is not one of Kubernetes.
    assert_eq!(
        state_attribute(ws, "hct_cluster.this", "kubernetes_version"),
        kubernetes
    );
    let groups = ["-cp-", "-platform-", "-general-"];
    let steps = node_steps(&log, "upgrading Talos", ": upgraded");
    assert_eq!(steps.len(), 18, "{steps:#?}\n{log}");
    for group in groups {
        assert_eq!(
            steps.iter().filter(|s| s.contains(group)).count(),
            6,
            "{steps:#?}"
        );
    }
    assert_one_at_a_time(&steps, &groups);
    // The control plane first: the pools, applied beside the cluster, wait
    // until every control plane runs the release and is back in service,
    // before any worker goes down (the sim's own order).
    let last_cp = timeline
        .iter()
        .rposition(|(name, ..)| name.contains("-cp-"))
        .expect("the control planes restarted");
    let first_worker_down = timeline
        .iter()
        .position(|(name, healthy, _)| !name.contains("-cp-") && !healthy)
        .expect("a worker went down");
    assert!(
        last_cp < first_worker_down,
        "a worker went down before the control plane was done\n{timeline:#?}"
    );
    // Every node restarted, and no two of one group were out of service at once.
    for group in groups {
        let (most, restarted) = out_of_service_at_once(&starts_before, &timeline, group);
        assert_eq!(restarted.len(), 3, "{group}: {restarted:?}\n{timeline:#?}");
        assert_eq!(most, 1, "{group}: {most} nodes down at once\n{timeline:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_talos_version_upgrades_the_nodes_one_at_a_time() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        let out = ws
            .terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.11.3"])
            .expect_success("apply v1.11.3");
        // The release's known problem, and the way out.
        let words = unwrapped(&format!("{} {}", out.stdout, out.stderr));
        assert!(
            words.contains("The nodes run Talos v1.11.3, which has a known problem"),
            "{out}"
        );
        assert!(words.contains("hct upgrades the nodes in place"), "{out}");
        assert!(
            releases(&sim).values().all(|r| r == "v1.11.3"),
            "{:?}",
            releases(&sim)
        );
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        // Talos moves one minor release at a time: v1.11 to v1.13 is refused.
        let out = ws
            .terraform(&["plan", "-var", "talos_version=v1.13.9"])
            .expect_failure("a skipped Talos minor");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("Talos upgrades one minor release at a time")
                && words.contains("the newest v1.12.x release"),
            "{out}"
        );
        let upgrade = ["-var", "talos_version=v1.12.6"];
        upgrade_in_place(&sim, &ws, &upgrade, "v1.12.6");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);

        let (code, out) = plan_exit_code(&ws, &upgrade);
        assert_eq!(code, 0, "plan after the upgrade\n{out}");

        // Someone upgrades noreturn-general-1 further by hand, and edits its
        // config: hct puts the config back but never downgrades the node.
        let admin = talos_admin(&ws);
        let general_1 = NodeAddress::new(
            "10.0.128.65".parse().unwrap(),
            Some(hct::net::Proxy::new(sim.proxy_addr())),
        );
        let handle = tokio::runtime::Handle::current();
        handle.block_on(async {
            let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
            let image = "factory.talos.dev/hcloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.12.7";
            node.upgrade(image).await.unwrap();
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while releases(&sim)["noreturn-general-1"] != "v1.12.7" {
            assert!(
                std::time::Instant::now() < deadline,
                "the manual upgrade never finished"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        handle.block_on(async {
            let edited = loop {
                // Back from its reboot when it answers again.
                if let Ok(mut node) = TalosClient::connect(&general_1, &admin).await
                    && let Ok(config) = node.machine_config().await
                {
                    let edited = config.replace("purpose: general", "purpose: edited");
                    if node
                        .apply_configuration(edited.as_bytes(), ApplyMode::Auto)
                        .await
                        .is_ok()
                    {
                        break edited;
                    }
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the node never came back"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            assert!(edited.contains("purpose: edited"));
        });
        let out = ws
            .terraform(&[&["apply", "-auto-approve"], &upgrade[..]].concat())
            .expect_failure("a node on a newer release");
        let words = unwrapped(&out.stderr);
        assert!(words.contains("Node runs a newer Talos"), "{out}");
        assert!(
            words.contains("noreturn-general-1 runs Talos v1.12.7, which is not older"),
            "{out}"
        );
        assert_eq!(releases(&sim)["noreturn-general-1"], "v1.12.7");
    });
}

/// The machine config noreturn-general-1 runs, as talosctl would read it.
fn general_1_config(sim: &SimHandle, ws: &Workspace) -> String {
    let admin = talos_admin(ws);
    let general_1 = NodeAddress::new(
        "10.0.128.65".parse().unwrap(),
        Some(hct::net::Proxy::new(sim.proxy_addr())),
    );
    tokio::runtime::Handle::current().block_on(async {
        let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
        node.machine_config().await.unwrap()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_on_talos_v1_13_comes_up_with_its_configs() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        let v1_13 = ["-var", "talos_version=v1.13.9"];
        ws.terraform(&[&["apply", "-auto-approve"], &v1_13[..]].concat())
            .expect_success("apply v1.13.9");
        assert_eq!(server_names(&sim), expected_names(3));
        assert!(
            releases(&sim).values().all(|r| r == "v1.13.9"),
            "{:?}",
            releases(&sim)
        );
        // Talos v1.13's default Kubernetes.
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "kubernetes_version"),
            "v1.36.3"
        );
        let config = general_1_config(&sim, &ws);
        assert!(config.contains("kind: HostnameConfig"), "{config}");
        assert!(config.contains("hostname: noreturn-general-1"), "{config}");
        assert!(config.contains("kind: LinkConfig"), "{config}");
        assert!(
            !config.contains("network: {}"),
            "v1.13 has no machine.network"
        );
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let (code, out) = plan_exit_code(&ws, &v1_13);
        assert_eq!(code, 0, "plan after the apply\n{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn talos_v1_12_upgrades_to_v1_13_in_place() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.12.6"])
            .expect_success("apply v1.12.6");
        assert!(
            releases(&sim).values().all(|r| r == "v1.12.6"),
            "{:?}",
            releases(&sim)
        );
        assert!(general_1_config(&sim, &ws).contains("network: {}"));
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "kubernetes_version"),
            "v1.35.2"
        );
        // v1.12 to v1.14 skips v1.13: refused at plan, with the way.
        let out = ws
            .terraform(&["plan", "-var", "talos_version=v1.14.0"])
            .expect_failure("v1.12 to v1.14");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("Talos upgrades one minor release at a time")
                && words.contains("Set talos_version to the newest v1.13.x release"),
            "{out}"
        );
        // Kubernetes v1.35 is within Talos v1.13's range and stays.
        let upgrade = ["-var", "talos_version=v1.13.9"];
        // With nowhere for the etcd snapshot, the upgrade is refused at plan.
        let nowhere = [&upgrade[..], &["-var", "etcd_snapshot_recipients=null"]].concat();
        let out = ws
            .terraform(&[&["plan"], &nowhere[..]].concat())
            .expect_failure("an upgrade without a snapshot");
        let words = unwrapped(&out.stderr);
        for said in [
            "No place for the etcd snapshot before this change",
            "their machine configs may change, and are known only at apply",
            "skip_pre_change_snapshot = true",
        ] {
            assert!(words.contains(said), "{said}\n{out}");
        }
        upgrade_in_place(&sim, &ws, &upgrade, "v1.13.9");
        // The nodes run the configs made for v1.13.
        let config = general_1_config(&sim, &ws);
        assert!(!config.contains("network: {}"), "{config}");
        assert!(config.contains("hcloud-installer/"), "{config}");
        assert!(config.contains(":v1.13.9"), "{config}");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);

        let (code, out) = plan_exit_code(&ws, &upgrade);
        assert_eq!(code, 0, "plan after the upgrade\n{out}");
    });
}

/// The reference cluster as examples/private-cluster makes it today: on
/// Talos v1.14 with its default Kubernetes, every Kubernetes setting in
/// v1.14's documents, each node's running config valid for Talos' own
/// v1.14 validator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_on_talos_v1_14_runs_the_kubernetes_documents() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        assert!(
            releases(&sim).values().all(|r| r == "v1.14.0"),
            "{:?}",
            releases(&sim)
        );
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "kubernetes_version"),
            "v1.37.2"
        );
        let config = general_1_config(&sim, &ws);
        for kind in [
            "KubeNodeConfig",
            "KubeletConfig",
            "KubeClusterConfig",
            "DiscoveryIdentityConfig",
        ] {
            assert!(
                config.contains(&format!("kind: {kind}")),
                "{kind}\n{config}"
            );
        }
        assert!(!config.contains("nodeLabels"), "{config}");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after the apply\n{out}");
    });
}

/// v1.13.9 → v1.14.0 in place (each node's config moving to the new
/// documents as it is upgraded), then Kubernetes v1.36 → v1.37.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn talos_v1_13_upgrades_to_v1_14_in_place_then_kubernetes_to_v1_37() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        let v1_13 = ["-var", "talos_version=v1.13.9"];
        ws.terraform(&[&["apply", "-auto-approve"], &v1_13[..]].concat())
            .expect_success("apply v1.13.9");
        assert!(general_1_config(&sim, &ws).contains("nodeLabels"));
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "kubernetes_version"),
            "v1.36.3"
        );
        let upgrade = ["-var", "talos_version=v1.14.0"];
        upgrade_in_place(&sim, &ws, &upgrade, "v1.14.0");
        let config = general_1_config(&sim, &ws);
        assert!(config.contains("kind: KubeNodeConfig"), "{config}");
        assert!(!config.contains("nodeLabels"), "{config}");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let (code, out) = plan_exit_code(&ws, &upgrade);
        assert_eq!(code, 0, "plan after the upgrade\n{out}");

        crate::kube_e2e::with_kubernetes_version(&ws, "v1.36.3");
        let kubernetes = [&upgrade[..], &["-var", "kubernetes_version=v1.37.2"]].concat();
        ws.terraform(&[&["apply", "-auto-approve"], &kubernetes[..]].concat())
            .expect_success("Kubernetes v1.37.2");
        assert!(
            general_1_config(&sim, &ws).contains("kubelet:v1.37.2"),
            "the kubelets moved"
        );
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let (code, out) = plan_exit_code(&ws, &kubernetes);
        assert_eq!(code, 0, "plan after the Kubernetes upgrade\n{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_stopped_half_way_is_finished_by_the_next_apply() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.11.3"])
            .expect_success("apply v1.11.3");
        let ids = server_ids(&sim);
        // noreturn-cp-2 takes 25 s to come back; the update may take 8.
        sim.add_fault(
            FaultSpec::parse(
                r#"{"talos": "slow_boot", "server": "noreturn-cp-2", "delay_ms": 25000}"#,
            )
            .unwrap(),
        );
        let out = ws
            .terraform(&[
                "apply",
                "-auto-approve",
                "-var",
                "talos_version=v1.12.6",
                "-var",
                "update_timeout=8s",
            ])
            .expect_failure("upgrade times out");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("Timed out waiting for noreturn-cp-2"),
            "{out}"
        );
        assert!(words.contains("after the upgrade"), "{out}");
        let halfway = releases(&sim);
        assert_eq!(halfway["noreturn-cp-1"], "v1.12.6", "{halfway:?}");
        assert_eq!(halfway["noreturn-cp-3"], "v1.11.3", "{halfway:?}");
        assert!(
            halfway
                .iter()
                .filter(|(n, _)| !n.contains("-cp-"))
                .all(|(_, r)| r == "v1.11.3"),
            "workers wait for the control plane: {halfway:?}"
        );

        sim.clear_faults();
        ws.terraform(&["apply", "-auto-approve", "-var", "talos_version=v1.12.6"])
            .expect_success("finish the upgrade");
        assert!(
            releases(&sim).values().all(|r| r == "v1.12.6"),
            "{:?}",
            releases(&sim)
        );
        assert_eq!(server_ids(&sim), ids);
        let (code, out) = plan_exit_code(&ws, &["-var", "talos_version=v1.12.6"]);
        assert_eq!(code, 0, "plan after finishing\n{out}");
    });
}

/// The server type of each server, by name.
fn server_types(sim: &SimHandle) -> BTreeMap<String, String> {
    sim.inspect(|w| {
        cluster_servers(w)
            .map(|s| (s.name.clone(), s.server_type.clone()))
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_type_resizes_the_servers_one_at_a_time() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let ids = server_ids(&sim);
        let disks_before = sim.inspect(|w| {
            cluster_servers(w)
                .map(|s| (s.name.clone(), s.primary_disk_size))
                .collect::<BTreeMap<_, _>>()
        });

        ws.write(
            "pools.auto.tfvars",
            &pools(3).replace(r#"sku = "cx33""#, r#"sku = "cx43""#),
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "{out}");
        assert!(
            out.stdout
                .contains(r#"hct_worker_pool.this["platform"] will be updated in-place"#),
            "{out}"
        );
        let cp_type = ["-var", "control_plane_server_type=cx33"];
        let log = apply_with_provider_log(&ws, &cp_type, "resize");

        for (name, server_type) in server_types(&sim) {
            let wanted = if name.contains("-platform-") {
                "cx43"
            } else if name.contains("-cp-") {
                "cx33"
            } else {
                "cx23"
            };
            assert_eq!(server_type, wanted, "{name}");
        }
        assert_eq!(server_ids(&sim), ids, "the same servers, resized");
        let disks_after = sim.inspect(|w| {
            cluster_servers(w)
                .map(|s| (s.name.clone(), s.primary_disk_size))
                .collect::<BTreeMap<_, _>>()
        });
        assert_eq!(disks_after, disks_before, "disks keep their size");
        // One at a time per group: each is back in service before the next
        // of its group goes down (the pool resizes beside the control plane:
        // only Talos upgrades wait for it).
        let steps = node_steps(
            &log,
            "changing the server type",
            "back in service on the new server type",
        );
        assert_eq!(steps.len(), 12, "{steps:#?}\n{log}");
        assert_one_at_a_time(&steps, &["-cp-", "-platform-"]);
        let (code, out) = plan_exit_code(&ws, &cp_type);
        assert_eq!(code, 0, "plan after resizing\n{out}");

        // Drift: a server resized in the Hetzner Console is resized back.
        let general_1 = server_id(&sim, "noreturn-general-1");
        sim.modify(|w| w.servers.get_mut(&general_1).unwrap().server_type = "cx33".into());
        let (code, out) = plan_exit_code(&ws, &cp_type);
        assert_eq!(code, 2, "{out}");
        let words = unwrapped(&out.stdout);
        assert!(
            words.contains(r#"~ server_type = "cx33" -> "cx23""#),
            "{out}"
        );
        ws.terraform(&[&["apply", "-auto-approve"], &cp_type[..]].concat())
            .expect_success("resize back");
        assert_eq!(server_types(&sim)["noreturn-general-1"], "cx23");
        let (code, out) = plan_exit_code(&ws, &cp_type);
        assert_eq!(code, 0, "plan after resizing back\n{out}");

        // Disks do not shrink: the platform servers keep their 80 GB, which
        // cx23 (40 GB) cannot hold. Refused before any server goes down.
        ws.write(
            "pools.auto.tfvars",
            &pools(3).replace(r#"sku = "cx33""#, r#"sku = "cx23""#),
        );
        let out = ws
            .terraform(&[&["apply", "-auto-approve"], &cp_type[..]].concat())
            .expect_failure("a type with a smaller disk");
        let words = unwrapped(&out.stderr);
        assert!(words.contains("Server type too small"), "{out}");
        assert!(words.contains("Hetzner cannot shrink disks"), "{out}");
        sim.inspect(|w| {
            for server in cluster_servers(w) {
                assert_eq!(server.status, ServerStatus::Running, "{}", server.name);
            }
        });
        assert_eq!(server_types(&sim)["noreturn-platform-1"], "cx43");
    });
}
