//! The command line of the `hct-sim` binary.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::durations::{Durations, Profile};
use crate::faults::{ActionFailure, FaultSpec, Respond, RouteFault};
use crate::sim::{KubeBinaries, SimOptions};

pub const USAGE: &str = "\
usage: hct-sim serve --token TOKEN [options]

Serves an emulated Hetzner Cloud API v1 and a SOCKS5 proxy into its private
networks. The first two lines on stdout are

  HCLOUD_ENDPOINT=http://127.0.0.1:PORT/v1
  HCT_TALOS_PROXY=socks5://127.0.0.1:PORT

so a shell can eval them. Runs until SIGINT or SIGTERM.

options:
  --listen ADDR           API address (default 127.0.0.1:0, a free port; loopback only)
  --proxy-listen ADDR     SOCKS5 address (default 127.0.0.1:0; loopback only)
  --token TOKEN           bearer token clients must send (or $HCLOUD_TOKEN)
  --seed                  add the network and Talos snapshots an hct cluster expects
  --state FILE            load the project from FILE and keep it saved there
  --rate-limit N          requests per hour (default 3600)
  --durations PROFILE     action durations: fast, short (default) or realistic
  --duration CMD=DUR      duration of one command, e.g. create_image=20s (repeatable)
  --fault JSON            a fault, e.g. '{\"route\":\"POST /servers\",\"respond\":503,\"count\":2}'
  --fail-action CMD[=N]   the next N (default: every) CMD actions end in an error
  --latency DUR           added to every API request
  --error-rate P          answer a random share P of API requests with 503
  --fault-seed N          seed for random faults, for repeatable runs
  --kubernetes FILE       run real etcd, kube-apiserver and kube-controller-manager
                          (and kubelet-csr-approver, Hetzner's CCM) behind the
                          clusters of their release: FILE holds the KEY=VALUE
                          lines `scripts/ensure-peers` prints for them
";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CliError {
    #[error("{0}\n\n{USAGE}")]
    Usage(String),
    #[error("{flag}: {reason}")]
    Invalid { flag: String, reason: String },
}

#[derive(Debug)]
pub enum Command {
    Serve(Box<SimOptions>),
    Help,
}

fn invalid(flag: &str, reason: impl ToString) -> CliError {
    CliError::Invalid {
        flag: flag.to_string(),
        reason: reason.to_string(),
    }
}

/// Parses the arguments after the program name. `env_token` is
/// `$HCLOUD_TOKEN`, used when `--token` is absent.
pub fn parse(
    args: impl IntoIterator<Item = String>,
    env_token: Option<String>,
) -> Result<Command, CliError> {
    let mut args = args.into_iter();
    match args.next().as_deref() {
        Some("serve") => {}
        Some("help" | "--help" | "-h") | None => return Ok(Command::Help),
        Some(other) => return Err(CliError::Usage(format!("unknown command '{other}'"))),
    }
    let mut options = SimOptions::default();
    let mut token = env_token;
    let mut profile = Profile::default();
    let mut overrides = Vec::new();
    while let Some(flag) = args.next() {
        if matches!(flag.as_str(), "--help" | "-h") {
            return Ok(Command::Help);
        }
        if flag == "--seed" {
            options.seed = true;
            continue;
        }
        let Some(value) = args.next() else {
            return Err(CliError::Usage(format!("{flag} needs a value")));
        };
        match flag.as_str() {
            "--listen" => options.listen = value.parse().map_err(|e| invalid(&flag, e))?,
            "--proxy-listen" => {
                options.proxy_listen = value.parse().map_err(|e| invalid(&flag, e))?
            }
            "--token" => token = Some(value),
            "--state" => options.state_file = Some(PathBuf::from(value)),
            "--rate-limit" => {
                options.rate_limit = match value.parse::<u32>() {
                    Ok(n) if n > 0 => n,
                    _ => return Err(invalid(&flag, "must be a positive integer")),
                }
            }
            "--durations" => profile = value.parse().map_err(|e: String| invalid(&flag, e))?,
            "--duration" => {
                overrides.push(Durations::parse_override(&value).map_err(|e| invalid(&flag, e))?)
            }
            "--fault" => options
                .faults
                .push(FaultSpec::parse(&value).map_err(|e| invalid(&flag, e))?),
            "--fail-action" => {
                let (command, count) = match value.split_once('=') {
                    Some((command, n)) => {
                        (command, Some(n.parse().map_err(|e| invalid(&flag, e))?))
                    }
                    None => (value.as_str(), None),
                };
                options
                    .faults
                    .push(FaultSpec::Action(ActionFailure::new(command, count)));
            }
            "--latency" => {
                let latency = humantime::parse_duration(&value).map_err(|e| invalid(&flag, e))?;
                options.faults.push(FaultSpec::Route(RouteFault {
                    route: "*".into(),
                    respond: None,
                    probability: None,
                    count: None,
                    latency_ms: Some(latency.as_millis() as u64),
                    after_handling: false,
                }));
            }
            "--error-rate" => {
                let p: f64 = value.parse().map_err(|e| invalid(&flag, e))?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(invalid(&flag, "must be between 0 and 1"));
                }
                options.faults.push(FaultSpec::Route(RouteFault {
                    route: "*".into(),
                    respond: Some(Respond::Status(503)),
                    probability: Some(p),
                    count: None,
                    latency_ms: None,
                    after_handling: false,
                }));
            }
            "--kubernetes" => {
                let text = std::fs::read_to_string(&value).map_err(|e| invalid(&flag, e))?;
                options.kubernetes =
                    Some(KubeBinaries::from_lines(&text).map_err(|e| invalid(&flag, e))?);
            }
            "--fault-seed" => {
                options.fault_seed = Some(value.parse().map_err(|e| invalid(&flag, e))?)
            }
            _ => return Err(CliError::Usage(format!("unknown option '{flag}'"))),
        }
    }
    options.token = token.ok_or_else(|| CliError::Usage("--token is required".into()))?;
    let mut durations = Durations::new(profile);
    for (command, duration) in overrides {
        durations = durations.with(&command, duration);
    }
    options.durations = durations;
    Ok(Command::Serve(Box::new(options)))
}

/// The lines a shell evaluates to use the emulator.
pub fn announcement(endpoint: &str, proxy: SocketAddr) -> String {
    format!("HCLOUD_ENDPOINT={endpoint}\nHCT_TALOS_PROXY=socks5://{proxy}\n")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn serve(line: &str) -> SimOptions {
        match parse(args(line), None).unwrap() {
            Command::Serve(options) => *options,
            Command::Help => panic!("help"),
        }
    }

    #[test]
    fn parses_serve_flags() {
        let o = serve(
            "serve --listen 127.0.0.1:4000 --token t --seed --rate-limit 10 --durations fast \
             --duration create_image=2s --fail-action create_image=1 --latency 20ms --error-rate 0.1",
        );
        assert_eq!(o.listen.port(), 4000);
        assert_eq!(o.token, "t");
        assert!(o.seed);
        assert_eq!(o.rate_limit, 10);
        assert_eq!(
            o.durations.for_command("create_image"),
            Duration::from_secs(2)
        );
        assert_eq!(
            o.durations.for_command("create_server"),
            Duration::from_millis(150)
        );
        assert_eq!(o.faults.len(), 3);
    }

    #[test]
    fn token_from_environment_and_errors() {
        match parse(args("serve"), Some("env".into())).unwrap() {
            Command::Serve(o) => assert_eq!(o.token, "env"),
            Command::Help => panic!("help"),
        }
        assert!(matches!(
            parse(args("serve"), None),
            Err(CliError::Usage(_))
        ));
        assert!(parse(args("serve --token t --rate-limit 0"), None).is_err());
        assert!(parse(args("serve --token t --bogus 1"), None).is_err());
        assert!(parse(args("serve --token t --listen"), None).is_err());
        assert!(matches!(parse(args("--help"), None), Ok(Command::Help)));
        assert!(parse(args("serve --token t --kubernetes /nonexistent"), None).is_err());
    }

    #[test]
    fn announcement_is_evaluable() {
        let text = announcement("http://127.0.0.1:1/v1", "127.0.0.1:2".parse().unwrap());
        assert_eq!(
            text,
            "HCLOUD_ENDPOINT=http://127.0.0.1:1/v1\nHCT_TALOS_PROXY=socks5://127.0.0.1:2\n"
        );
    }
}
