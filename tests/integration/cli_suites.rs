//! `scripts/test` runs the `e2e` test target under Terraform and OpenTofu
//! (`HCT_CLI=tofu`) at once, and this target under Terraform only. So every
//! test module that runs the CLI (uses tests/support's `Workspace`, directly
//! or through its reference example's `support::reference`) must live in
//! `tests/e2e/`, and no module here may: a new suite cannot be tested under
//! Terraform only. Each suite file under `tests/e2e/` must also be declared
//! in its `main.rs`, or it would silently not run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::repo_root;

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

fn runs_cli(file: &Path) -> bool {
    let text = std::fs::read_to_string(file).unwrap();
    text.contains("Workspace") || text.contains("support::reference")
}

#[test]
fn only_the_e2e_target_runs_the_cli() {
    let here = repo_root().join("tests/integration");
    let offending: Vec<PathBuf> = rust_files(&here)
        .into_iter()
        // This file names what it looks for.
        .filter(|f| !f.ends_with("cli_suites.rs") && runs_cli(f))
        .collect();
    assert!(
        offending.is_empty(),
        "{offending:?} run the CLI: move them into tests/e2e, which scripts/test runs under OpenTofu too"
    );
    let e2e = rust_files(&repo_root().join("tests/e2e"));
    assert!(
        e2e.iter().filter(|f| runs_cli(f)).count() >= 10,
        "tests/e2e lost its CLI suites: {e2e:?}"
    );
}

#[test]
fn every_e2e_suite_file_is_declared() {
    let dir = repo_root().join("tests/e2e");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let declared: BTreeSet<&str> = main
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut present = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && path.join("mod.rs").is_file()
            || path.extension().is_some_and(|e| e == "rs") && name != "main"
        {
            present.insert(name);
        }
    }
    let declared: BTreeSet<String> = declared
        .into_iter()
        .filter(|m| *m != "peers" && *m != "support")
        .map(str::to_owned)
        .collect();
    assert_eq!(
        declared, present,
        "tests/e2e/main.rs must declare every suite beside it"
    );
}
