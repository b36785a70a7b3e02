//! `terraform-provider-hct`: started by Terraform as a plugin. By hand:
//! `--debug` serves for a debugger (TF_REATTACH_PROVIDERS), `docs` generates
//! the registry docs, `--version` prints the version.

use std::process::ExitCode;
use std::sync::Arc;

use hct::protocol::serve::{self, Mode};
use hct::provider::VERSION;

const USAGE: &str = "usage: terraform-provider-hct [--debug | --version | docs [--check]]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => run(Mode::Plugin),
        ["--debug"] => run(Mode::Debug),
        ["--version"] | ["version"] => {
            println!(
                "terraform-provider-hct {VERSION} (plugin protocol {})",
                serve::PLUGIN_PROTOCOL_VERSION
            );
            ExitCode::SUCCESS
        }
        ["docs"] => docs(false),
        ["docs", "--check"] => docs(true),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(mode: Mode) -> ExitCode {
    if matches!(mode, Mode::Plugin)
        && let Err(e) = serve::check_launched_by_terraform(|k| std::env::var(k).ok())
    {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    hct::logging::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("hct: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve::serve(Arc::new(hct::resources::provider()), mode)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("hct: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Generates (or checks) `docs/` from the repository root.
fn docs(check: bool) -> ExitCode {
    let root = std::env::current_dir().unwrap_or_default();
    match hct::docs::write_or_check(&hct::resources::provider(), &root, check) {
        Ok(stale) if check && !stale.is_empty() => {
            eprintln!("docs are stale: {stale:?}\nrun `cargo run -- docs` and commit the result");
            ExitCode::FAILURE
        }
        Ok(written) => {
            for path in written {
                println!(
                    "{} docs/{}",
                    if check { "ok" } else { "wrote" },
                    path.display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hct docs: {e}");
            ExitCode::FAILURE
        }
    }
}
