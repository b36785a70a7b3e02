//! A component as a child process: its output appended to `<name>.log` in
//! the ring's directory, killed when dropped, and (on Linux) when the
//! thread that started it ends, so that no component outlives hct-sim.
//! Its HTTP proxy is a loopback port nothing listens on: Go programs
//! dial loopback directly and everything else through the proxy, so a
//! component that reaches for an address off this machine (a metadata
//! service, a webhook's Service IP) fails at once instead of sending it.

use std::fs::OpenOptions;
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;

use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start {name} ({binary}): {source}")]
    Spawn {
        name: String,
        binary: String,
        source: std::io::Error,
    },
    #[error("{name} exited ({status}); the end of {log}:\n{tail}")]
    Exited {
        name: String,
        status: String,
        log: String,
        tail: String,
    },
}

/// Where nothing listens (the discard port).
const DEAD_PROXY: &str = "http://127.0.0.1:9";
/// What a component gets of hct-sim's environment.
const KEPT_ENV: [&str; 3] = ["PATH", "HOME", "TMPDIR"];

/// A running component.
pub struct Component {
    pub name: &'static str,
    child: Child,
    log: std::path::PathBuf,
}

impl Component {
    pub fn spawn(
        name: &'static str,
        binary: &Path,
        args: &[String],
        dir: &Path,
    ) -> Result<Self, ProcessError> {
        Self::spawn_with_env(name, binary, args, &[], dir)
    }

    /// Like `spawn`, with `env` added to hct-sim's environment.
    pub fn spawn_with_env(
        name: &'static str,
        binary: &Path,
        args: &[String],
        env: &[(String, String)],
        dir: &Path,
    ) -> Result<Self, ProcessError> {
        let log = dir.join(format!("{name}.log"));
        let spawn_error = |source| ProcessError::Spawn {
            name: name.to_string(),
            binary: binary.display().to_string(),
            source,
        };
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(spawn_error)?;
        let err = out.try_clone().map_err(spawn_error)?;
        let mut command = Command::new(binary);
        // Nothing of hct-sim's environment but where programs and home
        // are: etcd takes any ETCD_* as a flag, the CCM HCLOUD_* and ROBOT_*.
        command.env_clear();
        for kept in KEPT_ENV {
            if let Some(value) = std::env::var_os(kept) {
                command.env(kept, value);
            }
        }
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("HTTP_PROXY", DEAD_PROXY)
            .env("HTTPS_PROXY", DEAD_PROXY)
            .env("NO_PROXY", "")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        #[cfg(target_os = "linux")]
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command.spawn().map_err(spawn_error)?;
        Ok(Self { name, child, log })
    }

    /// Err when the process has ended, with the end of its log.
    pub fn check(&mut self) -> Result<(), ProcessError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.exited(status.to_string())),
            Err(e) => Err(self.exited(e.to_string())),
        }
    }

    fn exited(&self, status: String) -> ProcessError {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n");
        ProcessError::Exited {
            name: self.name.to_string(),
            status,
            log: self.log.display().to_string(),
            tail,
        }
    }
}

/// Where [`free_ports`] looks first: below the kernel's ephemeral ports
/// (32768 and up by default), where outgoing connections take their local
/// port. A port picked there could be taken by one between the look and
/// the component's own bind (as an etcd peer port once was).
const LISTEN_PORTS: std::ops::Range<u16> = 10_000..32_768;

/// Ports a component not running now will listen on again (an etcd member
/// whose node is down keeps the peer URL etcd knows it by): never handed
/// out by [`free_ports`] meanwhile.
static RESERVED: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn reserved() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<u16>> {
    RESERVED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Keeps `ports` from [`free_ports`] until [`release`]d.
pub fn reserve(ports: &[u16]) {
    reserved().extend(ports);
}

pub fn release(ports: &[u16]) {
    let mut reserved = reserved();
    for port in ports {
        reserved.remove(port);
    }
}

/// Loopback ports free now for components to listen on, all different
/// (each held until all are found) and none reserved: random ones of
/// `LISTEN_PORTS` that bind, or the kernel's pick if none does within a
/// few tries.
pub fn free_ports<const N: usize>() -> std::io::Result<[u16; N]> {
    let mut held = Vec::with_capacity(N);
    let mut ports = [0; N];
    for port in &mut ports {
        let listener = match (0..64).find_map(|_| {
            let port = fastrand::u16(LISTEN_PORTS);
            if reserved().contains(&port) {
                return None;
            }
            TcpListener::bind(("127.0.0.1", port)).ok()
        }) {
            Some(listener) => listener,
            None => TcpListener::bind(("127.0.0.1", 0))?,
        };
        *port = listener.local_addr()?.port();
        held.push(listener);
    }
    Ok(ports)
}
