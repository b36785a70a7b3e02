//! `hct-sim serve …`: see `hct-sim --help`.

use std::io::Write;
use std::process::ExitCode;

use hct_sim::Sim;
use hct_sim::cli::{self, Command};

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();

    let options = match cli::parse(std::env::args().skip(1), std::env::var("HCLOUD_TOKEN").ok()) {
        Ok(Command::Serve(options)) => options,
        Ok(Command::Help) => {
            print!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("hct-sim: {e}");
            return ExitCode::from(2);
        }
    };
    let sim = match Sim::start(*options).await {
        Ok(sim) => sim,
        Err(e) => {
            eprintln!("hct-sim: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    let announced = stdout
        .write_all(cli::announcement(&sim.endpoint(), sim.proxy_addr()).as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(e) = announced {
        eprintln!("hct-sim: cannot write to stdout: {e}");
        return ExitCode::FAILURE;
    }

    wait_for_signal().await;
    match sim.shutdown().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hct-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn wait_for_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
