//! What hct keeps from whom, through a real CLI against hct-sim, on the
//! reference example: under the default settings no server's user data holds
//! any secret (read back from the sim, where Hetzner's metadata service would
//! serve it to every pod); `config_delivery = "user_data"` is opt-in, warns at
//! plan time and does put the configs there; and no secret of the state,
//! nor the hcloud token or a `ccm_token` of its own, appears in any log line
//! at `TF_LOG=trace` (Terraform's and the provider's) over an apply, a plan,
//! a Talos upgrade and a destroy.

use crate::support;

use std::io::Read as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hct_sim::SimHandle;
use support::Workspace;
use support::reference::{pools, state_attribute, workspace};
use support::unwrapped;

/// Keys whose values are secrets, in the YAML hct keeps in state: the
/// secrets bundle (talosctl's secrets.yaml), the talosconfig and the
/// kubeconfig. Certificates (`crt`) and the cluster's discovery id are not
/// secret.
const SECRET_KEYS: [&str; 7] = [
    "key",
    "token",
    "secret",
    "bootstraptoken",
    "secretboxencryptionsecret",
    "aescbcencryptionsecret",
    "client-key-data",
];

/// A secret to look for, and where it came from (never printed itself).
struct Needle {
    what: String,
    value: String,
}

/// Every secret value in `text` (block-style YAML), labelled with `origin`
/// and its key's path (`certs.os.key`); a base64 private key also yields its
/// PEM body's first line, in case something decoded it before logging.
fn secrets_in_yaml(origin: &str, text: &str) -> Vec<Needle> {
    let mut needles = Vec::new();
    // The keys above the current line, with their indentation.
    let mut parents: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let Some((key, value)) = line.trim().trim_start_matches("- ").split_once(':') else {
            continue;
        };
        let key = key.trim();
        while parents.last().is_some_and(|(i, _)| *i >= indent) {
            parents.pop();
        }
        let value = value.trim().trim_matches('"');
        if value.is_empty() {
            parents.push((indent, key.to_owned()));
            continue;
        }
        if !SECRET_KEYS.contains(&key) || value.len() < 16 {
            continue;
        }
        let path: Vec<&str> = parents
            .iter()
            .map(|(_, k)| k.as_str())
            .chain([key])
            .collect();
        let what = format!("{origin}: {}", path.join("."));
        if let Some(pem) = STANDARD
            .decode(value)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .filter(|pem| pem.contains("PRIVATE KEY"))
            && let Some(body) = pem
                .lines()
                .find(|l| l.len() >= 32 && !l.starts_with("-----"))
        {
            needles.push(Needle {
                what: format!("{what} (decoded PEM)"),
                value: body.to_owned(),
            });
        }
        needles.push(Needle {
            what,
            value: value.to_owned(),
        });
    }
    needles
}

/// The secrets of the state (the secrets bundle, both client configs) and
/// the hcloud token.
fn state_secrets(ws: &Workspace, sim: &SimHandle) -> Vec<Needle> {
    let mut needles = Vec::new();
    for attribute in ["machine_secrets", "talosconfig", "kubeconfig"] {
        let text = state_attribute(ws, "hct_cluster.this", attribute);
        needles.extend(secrets_in_yaml(attribute, &text));
    }
    needles.push(Needle {
        what: "the hcloud token".into(),
        value: sim.token().to_owned(),
    });
    // The OS CA key, the Kubernetes, etcd and aggregator CA keys, the
    // service-account key, the tokens, the encryption and discovery
    // secrets, and both client keys: far more than ten.
    assert!(needles.len() >= 10, "only {} secrets found", needles.len());
    needles
}

/// What Talos reads from user data: the config itself, or (when it is too
/// large for Hetzner) its gzip in base64.
fn user_data_text(raw: &str) -> String {
    match STANDARD.decode(raw.trim()) {
        Ok(gzipped) => {
            let mut text = String::new();
            flate2::read::GzDecoder::new(gzipped.as_slice())
                .read_to_string(&mut text)
                .expect("user data in base64 is gzip");
            text
        }
        Err(_) => raw.to_owned(),
    }
}

/// Each cluster server's name (the seed's NAT gateway left out) and the
/// secrets its user data holds.
fn secrets_in_user_data(sim: &SimHandle, needles: &[Needle]) -> Vec<(String, Vec<String>)> {
    let user_data: Vec<(String, Option<String>)> = sim.inspect(|w| {
        w.servers
            .values()
            .filter(|s| !hct_sim::seed::is_seeded(&s.labels))
            .map(|s| (s.name.clone(), s.user_data.clone()))
            .collect()
    });
    user_data
        .into_iter()
        .map(|(name, raw)| {
            let text = raw.as_deref().map(user_data_text).unwrap_or_default();
            let found = needles
                .iter()
                .filter(|n| text.contains(&n.value))
                .map(|n| n.what.clone())
                .collect();
            (name, found)
        })
        .collect()
}

const USER_DATA_WARNING: &str = "Machine configs in Hetzner user data: readable by every pod";

/// The reference example with one node in the general pool (seven nodes).
fn small_workspace(sim: &SimHandle) -> Workspace {
    let ws = workspace(sim);
    ws.write("pools.auto.tfvars", &pools(1));
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_no_secret_is_in_any_servers_user_data() {
    let sim = support::sim::start().await;
    let ws = small_workspace(&sim);
    tokio::task::block_in_place(|| {
        let out = ws
            .terraform(&["apply", "-auto-approve"])
            .expect_success("apply with the default delivery");
        assert!(
            !unwrapped(&format!("{} {}", out.stdout, out.stderr)).contains(USER_DATA_WARNING),
            "the default must not warn:\n{out}"
        );
        assert_eq!(
            state_attribute(&ws, "hct_cluster.this", "config_delivery"),
            "apply"
        );
        let needles = state_secrets(&ws, &sim);
        let found = secrets_in_user_data(&sim, &needles);
        assert_eq!(found.len(), 7, "{found:?}");
        for (server, secrets) in &found {
            assert!(secrets.is_empty(), "{server}'s user data holds {secrets:?}");
        }
        // A pool's state holds the worker share and its own certificates:
        // no secret of the bundle that a worker's config does not hold.
        let pool_join = state_attribute(&ws, "hct_worker_pool.this[\"general\"]", "worker_join");
        let held: Vec<&str> = needles
            .iter()
            .filter(|n| n.what.starts_with("machine_secrets:") && pool_join.contains(&n.value))
            .map(|n| n.what.as_str())
            .collect();
        for what in &held {
            assert!(
                what.contains("trustdinfo.token")
                    || what.contains("bootstraptoken")
                    || what.ends_with("cluster.secret")
                    || what.ends_with("cluster.id"),
                "the pool's worker_join holds {what}"
            );
        }
        assert!(
            held.iter().any(|w| w.contains("bootstraptoken")),
            "the search finds what is there: {held:?}"
        );
        let keys = pool_join.matches("PRIVATE KEY-----").count();
        assert_eq!(keys, 4, "only the pool's two client keys (BEGIN, END)");
        ws.terraform(&["destroy", "-auto-approve"])
            .expect_success("destroy");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_data_delivery_is_opt_in_warns_and_exposes_the_secrets() {
    let sim = support::sim::start().await;
    let ws = small_workspace(&sim);
    let opt_in = ["-var", "config_delivery=user_data"];
    tokio::task::block_in_place(|| {
        let out = ws
            .terraform(&[&["plan"], &opt_in[..]].concat())
            .expect_success("plan with user_data");
        let words = unwrapped(&format!("{} {}", out.stdout, out.stderr));
        assert!(words.contains(USER_DATA_WARNING), "{out}");
        assert!(words.contains("on control planes every CA key"), "{out}");
        assert!(words.contains("cilium_metadata_policy"), "{out}");
        assert!(words.contains("config_delivery"), "{out}");

        ws.terraform(&[&["apply", "-auto-approve"], &opt_in[..]].concat())
            .expect_success("apply with user_data");
        // What the warning says is true: the check above finds them here.
        let needles = state_secrets(&ws, &sim);
        let ca_keys = [
            "machine_secrets: certs.etcd.key",
            "machine_secrets: certs.k8s.key",
            "machine_secrets: certs.k8saggregator.key",
            "machine_secrets: certs.k8sserviceaccount.key",
            "machine_secrets: certs.os.key",
            "machine_secrets: secrets.secretboxencryptionsecret",
        ];
        let tokens = [
            "machine_secrets: trustdinfo.token",
            "machine_secrets: secrets.bootstraptoken",
        ];
        for needle in ca_keys.iter().chain(&tokens) {
            assert!(
                needles.iter().any(|n| n.what == *needle),
                "no {needle} in the state"
            );
        }
        for (server, secrets) in secrets_in_user_data(&sim, &needles) {
            let has = |what: &str| secrets.iter().any(|s| s == what);
            for token in tokens {
                assert!(has(token), "{server}: {secrets:?}");
            }
            for key in ca_keys {
                // Control planes hold every CA key (from Talos v1.14 the
                // Kubernetes ones as PEM text); Talos gives workers none.
                assert_eq!(
                    has(key) || has(&format!("{key} (decoded PEM)")),
                    server.contains("-cp-"),
                    "{server}, {key}: {secrets:?}"
                );
            }
            // Client credentials and the hcloud token are never in a config.
            for never in [
                "talosconfig: key",
                "kubeconfig: client-key-data",
                "the hcloud token",
            ] {
                assert!(!has(never), "{server}: {secrets:?}");
            }
        }
        ws.terraform(&[&["destroy", "-auto-approve"], &opt_in[..]].concat())
            .expect_success("destroy");
    });
}

/// Runs `args` with `TF_LOG=trace` and returns everything it printed.
fn traced(ws: &Workspace, args: &[&str], what: &str) -> String {
    let out = ws.command(args).env("TF_LOG", "trace").output().unwrap();
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}); last lines:\n{}",
        out.status,
        log.lines().rev().take(40).collect::<Vec<_>>().join("\n")
    );
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_is_in_any_log_line_at_trace_level() {
    let sim = support::sim::start().await;
    let ws = small_workspace(&sim);
    // A ccm_token of its own, so the search tells it from the hcloud token.
    let ccm_token: String = std::iter::repeat_with(fastrand::alphanumeric)
        .take(64)
        .collect();
    ws.write("ccm.auto.tfvars", &format!("ccm_token = \"{ccm_token}\"\n"));
    tokio::task::block_in_place(|| {
        let v1_12 = ["-var", "talos_version=v1.12.6"];
        let v1_13 = ["-var", "talos_version=v1.13.9"];
        let mut logs = vec![(
            "apply",
            traced(
                &ws,
                &[&["apply", "-auto-approve"], &v1_12[..]].concat(),
                "apply",
            ),
        )];
        logs.push((
            "plan",
            traced(&ws, &[&["plan"], &v1_12[..]].concat(), "plan"),
        ));
        logs.push((
            "upgrade",
            traced(
                &ws,
                &[&["apply", "-auto-approve"], &v1_13[..]].concat(),
                "upgrade",
            ),
        ));
        // The secrets as they are at the end (the client configs are issued
        // again when the endpoint changes, never on an upgrade).
        let mut needles = state_secrets(&ws, &sim);
        logs.push((
            "destroy",
            traced(
                &ws,
                &[&["destroy", "-auto-approve"], &v1_13[..]].concat(),
                "destroy",
            ),
        ));
        // The opt-in delivery sends whole configs to Hetzner: not to the log.
        let user_data = ["-var", "config_delivery=user_data"];
        logs.push((
            "apply with user_data",
            traced(
                &ws,
                &[&["apply", "-auto-approve"], &user_data[..]].concat(),
                "apply with user_data",
            ),
        ));
        needles.extend(state_secrets(&ws, &sim));
        needles.push(Needle {
            what: "the ccm_token".into(),
            value: ccm_token.clone(),
        });
        logs.push((
            "destroy with user_data",
            traced(
                &ws,
                &[&["destroy", "-auto-approve"], &user_data[..]].concat(),
                "destroy with user_data",
            ),
        ));
        let mut hits = Vec::new();
        let mut lines = 0;
        for (command, log) in &logs {
            // A trace log really is one: the provider's own lines are in it.
            assert!(log.contains("[TRACE]"), "{command}: no trace lines");
            assert!(log.contains("hct"), "{command}: no provider lines");
            for (number, line) in log.lines().enumerate() {
                lines += 1;
                for needle in &needles {
                    if line.contains(&needle.value) {
                        hits.push(format!("{command}, line {}: {}", number + 1, needle.what));
                    }
                }
            }
        }
        eprintln!(
            "searched {lines} log lines for {} secrets: {} hits",
            needles.len(),
            hits.len()
        );
        assert!(hits.is_empty(), "secrets in the logs:\n{}", hits.join("\n"));
    });
}
