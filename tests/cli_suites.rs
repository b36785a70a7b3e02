//! `scripts/test` runs the end-to-end suites a second time under OpenTofu
//! (`HCT_CLI=tofu`). Its list of them must name every test file that runs the
//! CLI (uses tests/support's `Workspace`, directly or through its reference
//! example's `support::reference`; a target in a directory counts all its
//! files), so that a new suite cannot be tested
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

    // A test target is tests/<name>.rs, or tests/<name>/main.rs with the
    // modules beside it.
    let runs_cli = |files: &[std::path::PathBuf]| {
        files.iter().any(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            text.contains("Workspace") || text.contains("support::reference")
        })
    };
    let mut using_cli = BTreeSet::new();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let files: Vec<std::path::PathBuf> = if path.extension().is_some_and(|e| e == "rs") {
            vec![path]
        } else if path.join("main.rs").is_file() {
            std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "rs"))
                .collect()
        } else {
            continue;
        };
        if name != "cli_suites" && runs_cli(&files) {
            using_cli.insert(name);
        }
    }
    assert!(!using_cli.is_empty());
    assert_eq!(
        listed, using_cli,
        "scripts/test's e2e_suites must list exactly the tests/*.rs that run the CLI"
    );
}
