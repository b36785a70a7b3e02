//! `scripts/test` runs the end-to-end suites a second time under OpenTofu
//! (`HCT_CLI=tofu`). Its list of them must name every test file that runs the
//! CLI (uses tests/support's `Workspace`, directly or through its reference
//! example's `support::reference`), so that a new suite cannot be tested
//! under Terraform only.

use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn scripts_test_runs_every_cli_suite_under_opentofu_too() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(root.join("scripts/test")).unwrap();
    let listed: BTreeSet<String> = script
        .lines()
        .find_map(|l| l.strip_prefix("e2e_suites=("))
        .and_then(|rest| rest.strip_suffix(')'))
        .expect("scripts/test has a one-line e2e_suites=(...)")
        .split_whitespace()
        .map(str::to_owned)
        .collect();

    let mut using_cli = BTreeSet::new();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let runs_cli = text.contains("Workspace") || text.contains("support::reference");
            if runs_cli && path.file_name().unwrap() != "cli_suites.rs" {
                using_cli.insert(path.file_stem().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    assert!(!using_cli.is_empty());
    assert_eq!(
        listed, using_cli,
        "scripts/test's e2e_suites must list exactly the tests/*.rs that run the CLI"
    );
}
