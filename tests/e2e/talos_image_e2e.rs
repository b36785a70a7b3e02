//! `data "hct_talos_image"` through a real Terraform against hct-sim: the
//! provider reads HCLOUD_ENDPOINT/HCLOUD_TOKEN, finds the seeded snapshot by
//! its labels, and explains what to do when there is none.

use crate::support;

use serde_json::json;
use support::Workspace;

const CONFIG: &str = r#"
terraform {
  required_providers {
    hct = { source = "registry.hct.internal/hct/hct" }
  }
}
provider "hct" {}
variable "talos_version" {
  type    = string
  default = "v1.12.6"
}
variable "arch" {
  type    = string
  default = "amd64"
}
data "hct_talos_image" "this" {
  talos_version = var.talos_version
  architecture  = var.arch
}
output "id" { value = data.hct_talos_image.this.id }
output "schematic_id" { value = data.hct_talos_image.this.schematic_id }
output "installer_image" { value = data.hct_talos_image.this.installer_image }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finds_the_snapshot_and_explains_a_missing_one() {
    let sim = hct_sim::Sim::start(hct_sim::SimOptions {
        seed: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let seeded = support::sim::seeded_talos_image(&sim, "v1.12.6", "amd64");
    let mut ws = Workspace::dev_override(&[("main.tf", CONFIG)]);
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token());

    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply");
        let outputs = ws.outputs();
        assert_eq!(outputs["id"]["value"], json!(seeded.to_string()));
        let schematic = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";
        assert_eq!(outputs["schematic_id"]["value"], json!(schematic));
        assert_eq!(
            outputs["installer_image"]["value"],
            json!(format!(
                "factory.talos.dev/hcloud-installer/{schematic}:v1.12.6"
            ))
        );

        let old = ws
            .terraform(&["plan", "-var", "talos_version=v1.11.3"])
            .expect_success("plan v1.11.3");
        assert!(
            old.stdout.contains("containerd 2.1.4") || old.stderr.contains("containerd 2.1.4"),
            "{old}"
        );

        let missing = ws
            .terraform(&["plan", "-var", "talos_version=v1.13.0"])
            .expect_failure("no snapshot");
        assert!(
            missing.stderr.contains("No Talos snapshot found"),
            "{missing}"
        );
        assert!(missing.stderr.contains("hct_talos_image"), "{missing}");

        let bad = ws
            .terraform(&["plan", "-var", "arch=x86"])
            .expect_failure("bad architecture");
        assert!(bad.stderr.contains("\"amd64\" or \"arm64\""), "{bad}");
    });
    sim.shutdown().await.unwrap();
}

#[test]
fn without_a_token_the_error_says_where_to_set_it() {
    let mut ws = Workspace::dev_override(&[("main.tf", CONFIG)]);
    ws.env("HCLOUD_TOKEN", "")
        .env("HCLOUD_ENDPOINT", "http://127.0.0.1:9/v1");
    let out = ws.terraform(&["plan"]).expect_failure("no token");
    assert!(out.stderr.contains("No Hetzner Cloud token"), "{out}");
    assert!(out.stderr.contains("HCLOUD_TOKEN"), "{out}");
}
