//! The reference cluster's life: built, scaled, drifted, imported and
//! destroyed; Ctrl-C during a long wait; configs delivered as user data; the
//! provider killed mid-apply.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builds_scales_drifts_imports_and_destroys_the_reference_cluster() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("first apply");
        assert_eq!(server_names(&sim), expected_names(3));
        sim.inspect(|w| {
            for server in cluster_servers(w) {
                assert!(
                    server.public_ipv4.is_none() && server.public_ipv6.is_none(),
                    "{} has a public IP",
                    server.name
                );
                assert!(
                    server.placement_group.is_some(),
                    "{} is in no placement group",
                    server.name
                );
                // The default delivery: configs applied in maintenance mode.
                assert!(server.user_data.is_none(), "{} has user data", server.name);
            }
        });
        // cp, platform and general: one spread group each.
        assert_eq!(placement_groups(&sim), 3);
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let outputs = ws.outputs();
        assert_eq!(
            outputs["endpoint"]["value"],
            json!("https://10.0.128.17:6443")
        );
        let cp = &outputs["control_plane_nodes"]["value"];
        assert_eq!(cp[1]["name"], json!("noreturn-cp-2"));
        assert_eq!(cp[1]["ip"], json!("10.0.128.18"));
        let kubeconfig = outputs["kubeconfig"]["value"].as_str().unwrap();
        assert!(
            kubeconfig.contains("https://10.0.128.17:6443"),
            "{kubeconfig}"
        );
        let talosconfig = outputs["talosconfig"]["value"].as_str().unwrap();
        assert!(talosconfig.contains("10.0.128.19"), "{talosconfig}");

        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "a second plan must be empty\n{out}");

        // Scale general 3 → 5: the next IPs.
        ws.write("pools.auto.tfvars", &pools(5));
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("scale up");
        assert_eq!(server_names(&sim), expected_names(5));
        let general = &ws.outputs()["worker_nodes"]["value"]["general"];
        assert_eq!(general[4]["ip"], json!("10.0.128.69"));

        // 5 → 2: highest indexes go.
        ws.write("pools.auto.tfvars", &pools(2));
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("scale down");
        assert_converged(&sim, &ws, 2, "scaling down");

        // Drift: a server deleted and labels changed behind Terraform's back.
        let gone = server_id(&sim, "noreturn-general-2");
        sim.modify(|w| w.servers.remove(&gone));
        let cp2 = server_id(&sim, "noreturn-cp-2");
        sim.modify(|w| {
            let server = w.servers.get_mut(&cp2).unwrap();
            server.labels.insert("rogue".into(), "yes".into());
        });
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "drift must show\n{out}");
        assert!(out.stdout.contains("noreturn-general-2"), "{out}");
        assert!(out.stdout.contains("rogue"), "{out}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("repair drift");
        assert_eq!(server_names(&sim), expected_names(2));
        let labels = sim.inspect(|w| w.servers[&cp2].labels.clone());
        assert!(!labels.contains_key("rogue"), "{labels:?}");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after repair\n{out}");

        // A changed node label: the pool's configs are re-applied in place.
        let before = pool_nodes(&ws, "platform");
        ws.write(
            "pools.auto.tfvars",
            &pools_labelled(2, r#"{ purpose = "platform", tier = "one" }"#),
        );
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "{out}");
        assert!(out.stdout.contains("config_sha256"), "{out}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("re-apply configs");
        let after = pool_nodes(&ws, "platform");
        for ((name, id_before, sha_before), (_, id_after, sha_after)) in before.iter().zip(&after) {
            assert_eq!(id_before, id_after, "{name} must keep its server");
            assert_ne!(sha_before, sha_after, "{name} must get the new config");
        }
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after re-applying\n{out}");
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 8);

        // Import a pool back into state.
        let address = "hct_worker_pool.this[\"platform\"]";
        ws.terraform(&["state", "rm", address])
            .expect_success("state rm");
        ws.terraform(&["import", address, "noreturn/platform"])
            .expect_success("import pool");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after import");
        assert_converged(&sim, &ws, 2, "import (which must not create servers)");

        // Import the cluster by name, with its secrets.
        let secrets = state_attribute(&ws, "hct_cluster.this", "machine_secrets");
        ws.write(
            "secrets.auto.tfvars",
            &format!("machine_secrets = <<EOT\n{secrets}EOT\n"),
        );
        ws.terraform(&["state", "rm", "hct_cluster.this"])
            .expect_success("state rm cluster");
        ws.terraform(&["import", "hct_cluster.this", "noreturn"])
            .expect_success("import cluster");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after cluster import");
        assert_converged(
            &sim,
            &ws,
            2,
            "cluster import (which must not create servers)",
        );

        ws.terraform(&["destroy", "-auto-approve"])
            .expect_success("destroy");
        assert!(
            server_names(&sim).is_empty(),
            "left behind: {:?}",
            server_names(&sim)
        );
        assert_eq!(placement_groups(&sim), 0);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_long_wait_promptly_and_keeps_the_servers_in_state() {
    let sim = sim().await;
    let ws = workspace(&sim);
    sim.add_fault(FaultSpec::parse(r#"{"talos": "slow_boot", "delay_ms": 600000}"#).unwrap());
    tokio::task::block_in_place(|| {
        // The pools create their servers beside the control plane's.
        let mut apply = apply_until_servers_exist(&ws, &sim, 9);
        std::thread::sleep(Duration::from_millis(500));
        // What Ctrl-C does: SIGINT to Terraform, which sends StopProvider.
        std::process::Command::new("kill")
            .args(["-INT", &apply.id().to_string()])
            .status()
            .unwrap();
        let stopped = std::time::Instant::now();
        let status = apply.wait().unwrap();
        assert!(!status.success());
        assert!(
            stopped.elapsed() < Duration::from_secs(15),
            "took {:?} to stop",
            stopped.elapsed()
        );
        let ids = control_plane_server_ids(&ws);
        assert_eq!(ids.len(), 3, "every server in state: {ids:?}");
    });
}

/// The server ids of `hct_cluster.this.control_plane_nodes` in state.
fn control_plane_server_ids(ws: &Workspace) -> Vec<i64> {
    resource_values(ws, "hct_cluster.this")["control_plane_nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["server_id"].as_i64())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_delivered_as_user_data_come_up_too() {
    let sim = sim().await;
    let ws = workspace(&sim);
    let opt_in = ["-var", "config_delivery=user_data"];
    tokio::task::block_in_place(|| {
        ws.terraform(&[&["apply", "-auto-approve"], &opt_in[..]].concat())
            .expect_success("apply with config_delivery = user_data");
        assert_eq!(server_names(&sim), expected_names(3));
        sim.inspect(|w| {
            for server in cluster_servers(w) {
                assert!(
                    server.user_data.is_some(),
                    "{} has no user data",
                    server.name
                );
            }
        });
        assert_eq!(assert_talos_accepts_applied_configs(&sim), 9);
        let (code, out) = plan_exit_code(&ws, &opt_in);
        assert_eq!(code, 0, "{out}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_killed_mid_apply_then_apply_again_converges() {
    let sim = sim().await;
    let ws = workspace(&sim);
    // Nodes boot slowly (15 s), so the apply is still waiting when it is killed.
    sim.add_fault(FaultSpec::parse(r#"{"talos": "slow_boot", "delay_ms": 15000}"#).unwrap());
    tokio::task::block_in_place(|| {
        let mut apply = apply_until_servers_exist(&ws, &sim, 3);
        let provider = support::provider_child(apply.id()).expect("the provider process");
        // SAFETY-free: a plain kill(2) of our own child's child.
        std::process::Command::new("kill")
            .args(["-9", &provider.to_string()])
            .status()
            .unwrap();
        let status = apply.wait().unwrap();
        assert!(!status.success());

        sim.clear_faults();
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply after the kill");
        assert_converged(&sim, &ws, 3, "the kill");
        ws.terraform(&["destroy", "-auto-approve"])
            .expect_success("destroy");
        assert!(server_names(&sim).is_empty());
    });
}
