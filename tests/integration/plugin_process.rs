//! The plugin as a process: refuses to run by hand, announces itself with the
//! go-plugin handshake on a private socket, survives Ctrl-C (Terraform sends
//! StopProvider instead) and exits on SIGTERM.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_terraform-provider-hct");
const COOKIE: &str = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

#[test]
fn refuses_to_run_without_the_magic_cookie() {
    let output = Command::new(BINARY)
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not meant to be run by hand"), "{stderr}");
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn handshake_on_a_private_socket_then_ignore_sigint_and_exit_on_sigterm() {
    let socket_parent = tempfile::tempdir().unwrap();
    let mut child = Command::new(BINARY)
        .env("TF_PLUGIN_MAGIC_COOKIE", COOKIE)
        .env("PLUGIN_PROTOCOL_VERSIONS", "5,6")
        .env("PLUGIN_UNIX_SOCKET_DIR", socket_parent.path())
        .env_remove("PLUGIN_CLIENT_CERT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let fields: Vec<&str> = line.trim_end().split('|').collect();
    assert_eq!(&fields[..3], ["1", "6", "unix"], "{line}");
    assert_eq!(fields[4], "grpc");
    let socket = Path::new(fields[3]);
    assert!(socket.starts_with(socket_parent.path()));
    let dir_mode = std::fs::metadata(socket.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700, "socket directory must be private");
    std::os::unix::net::UnixStream::connect(socket).expect("the socket accepts connections");

    signal(child.id(), "INT");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGINT must not stop the plugin"
    );

    signal(child.id(), "TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "plugin did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(!socket.exists(), "the socket directory is cleaned up");
}

#[test]
fn refuses_terraform_that_offers_only_protocol_five() {
    let output = Command::new(BINARY)
        .env("TF_PLUGIN_MAGIC_COOKIE", COOKIE)
        .env("PLUGIN_PROTOCOL_VERSIONS", "5")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("only version 6"));
}
