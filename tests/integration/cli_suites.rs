//! `scripts/test` runs the `e2e` test target under Terraform and OpenTofu
//! (`HCT_CLI=tofu`) at once, and this target under Terraform only. So every
//! test module that runs the CLI (uses tests/support's `Workspace`, directly
//! or through its reference example's `support::reference`) must live in
//! `tests/e2e/`, and no module here may: a new suite cannot be tested under
//! Terraform only. Every file beside a target's `main.rs` (`tests/e2e`,
//! `tests/integration`, `sim/tests/api`) must also be declared there, or it
//! would silently not run.

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

/// The modules declared (`mod name;`) in a target's main.rs, but the
/// shared ones it takes from elsewhere (`#[path]`).
fn declared(main: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(main).unwrap();
    let mut out = BTreeSet::new();
    let mut borrowed = false;
    for line in text.lines() {
        if line.starts_with("#[path") {
            borrowed = true;
        } else if let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) {
            if !borrowed {
                out.insert(name.to_owned());
            }
            borrowed = false;
        }
    }
    out
}

/// The modules beside a target's main.rs: `name.rs` and `name/mod.rs`.
fn present(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && path.join("mod.rs").is_file()
            || path.extension().is_some_and(|e| e == "rs") && name != "main"
        {
            out.insert(name);
        }
    }
    out
}

#[test]
fn every_test_file_is_declared_in_its_target() {
    for target in ["tests/e2e", "tests/integration", "sim/tests/api"] {
        let dir = repo_root().join(target);
        assert_eq!(
            declared(&dir.join("main.rs")),
            present(&dir),
            "{target}/main.rs must declare every module beside it, or it never runs"
        );
    }
}
