//! What changes behind hct's back: a node's config changed with talosctl,
//! and client configs near the end of their life.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_changed_outside_hct_shows_in_the_plan_and_is_put_back() {
    let sim = sim().await;
    let ws = workspace(&sim);
    let admin = tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        talos_admin(&ws)
    });
    let general_1 = NodeAddress::new(
        "10.0.128.65".parse().unwrap(),
        Some(hct::net::Proxy::new(sim.proxy_addr())),
    );
    let ids_before = pool_nodes(&ws, "general");

    // Someone edits noreturn-general-1's config with talosctl.
    let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
    let applied = node.machine_config().await.unwrap();
    let edited = applied.replace("purpose: general", "purpose: edited");
    assert_ne!(edited, applied, "the config carries the pool's node label");
    node.apply_configuration(edited.as_bytes(), ApplyMode::Auto)
        .await
        .unwrap();

    tokio::task::block_in_place(|| {
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "the edited config must show\n{out}");
        assert!(out.stdout.contains("config_sha256"), "{out}");
        assert!(
            out.stdout
                .contains(r#"hct_worker_pool.this["general"] will be updated in-place"#),
            "{out}"
        );
        assert!(
            !out.stdout
                .contains(r#"hct_worker_pool.this["platform"] will be updated"#),
            "{out}"
        );
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("put the config back");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after putting it back\n{out}");
    });
    let ids_after = pool_nodes(&ws, "general");
    assert_eq!(ids_before, ids_after, "same servers, same config hashes");
    let mut node = TalosClient::connect(&general_1, &admin).await.unwrap();
    assert_eq!(node.machine_config().await.unwrap(), applied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_configs_in_their_last_month_are_issued_again() {
    let sim = sim().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        // Eleven and a half months later: state holds configs issued then.
        let yaml = state_attribute(&ws, "hct_cluster.this", "machine_secrets");
        let secrets = Secrets::from_yaml(&yaml).unwrap();
        let plan_json = state_attribute(&ws, "hct_cluster.this", "network_plan");
        let plan_json: serde_json::Value = serde_json::from_str(&plan_json).unwrap();
        let plan = hct::network_plan::NetworkPlan::from_json(&plan_json).unwrap();
        let issued = SystemTime::now() - Duration::from_secs(345 * 24 * 3600);
        let old_talosconfig = talosconfig_at("noreturn", &plan, &secrets, issued).unwrap();
        let old_kubeconfig = admin_kubeconfig_at("noreturn", &plan, &secrets, issued).unwrap();
        let state_path = ws.path().join("terraform.tfstate");
        let mut state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
        let cluster = state["resources"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|r| r["type"] == "hct_cluster")
            .unwrap();
        let attributes = &mut cluster["instances"][0]["attributes"];
        attributes["talosconfig"] = json!(old_talosconfig.as_str());
        attributes["kubeconfig"] = json!(old_kubeconfig.as_str());
        state["serial"] = json!(state["serial"].as_i64().unwrap() + 1);
        std::fs::write(&state_path, state.to_string()).unwrap();

        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 2, "the expiring configs must be renewed\n{out}");
        assert!(
            out.stdout
                .contains("hct_cluster.this will be updated in-place"),
            "{out}"
        );
        assert!(out.stdout.contains("~ talosconfig"), "{out}");
        assert!(out.stdout.contains("~ kubeconfig"), "{out}");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("renew");
        let year = Duration::from_secs(360 * 24 * 3600);
        for name in ["talosconfig", "kubeconfig"] {
            let renewed = state_attribute(&ws, "hct_cluster.this", name);
            let expires = client_certificate_expiry(&renewed).unwrap();
            assert!(expires > SystemTime::now() + year, "{name} was not renewed");
        }
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "plan after renewing\n{out}");
    });
}
