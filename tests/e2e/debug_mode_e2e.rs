//! `terraform-provider-hct --debug` serves outside Terraform and prints a
//! TF_REATTACH_PROVIDERS value with which a real Terraform plans.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn terraform_plans_against_a_provider_in_debug_mode() {
    let mut provider = Command::new(support::provider_binary())
        .arg("--debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let reattach = BufReader::new(provider.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.trim()
                .strip_prefix("export TF_REATTACH_PROVIDERS='")
                .and_then(|rest| rest.strip_suffix('\''))
                .map(str::to_string)
        })
        .expect("debug mode prints the export line");

    let example =
        std::fs::read_to_string(support::repo_root().join("examples/network-plan/main.tf"))
            .unwrap();
    let mut ws = support::Workspace::with_cli_config(
        &[("main.tf", &example)],
        "provider_installation {\n  direct {}\n}\n",
    );
    ws.env("TF_REATTACH_PROVIDERS", &reattach);
    let plan = ws.terraform(&["plan"]);
    let _ = provider.kill();
    let _ = provider.wait();
    let plan = plan.expect_success("plan against the reattached provider");
    assert!(plan.stdout.contains("10.0.128.17"), "{plan}");
}
