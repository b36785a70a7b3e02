//! Reaching the private network from where Terraform runs.
//!
//! - [`http_client`]: how hct's HTTP clients start.
//! - `socks5`: dialing through a SOCKS5 proxy (Tailscale's userspace proxy,
//!   an `ssh -D` bastion, hct-sim's proxy), for the Talos API, the
//!   Kubernetes API probe and the image builder's SSH.

pub mod socks5;

/// How hct's HTTP clients (Hetzner's API, the backup bucket) start: TLS
/// crypto from ring (reqwest takes the process default, as everywhere in
/// hct), hct's user agent, and 10 s to connect.
pub fn http_client() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(format!(
            "terraform-provider-hct/{}",
            crate::build_info::VERSION
        ))
        .connect_timeout(std::time::Duration::from_secs(10))
}

use std::fmt;
use std::net::SocketAddr;
use std::sync::Mutex;

/// A SOCKS5 proxy into the private network: where it listens, and the user
/// name and password to give it (RFC 1929), when `talos_proxy` has them
/// (`socks5://user:password@host:port`; hct-sim takes the network's name
/// there, for networks that overlap). Debug and Display show no password.
/// `Copy`, as the address alone was: the credentials are kept once per
/// process (`intern`), and a process sees one or two.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Proxy {
    pub addr: SocketAddr,
    credentials: Option<&'static (String, String)>,
}

/// The one copy of each user name and password the process has seen.
fn intern(user: String, password: String) -> &'static (String, String) {
    static SEEN: Mutex<Vec<&'static (String, String)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = seen.iter().find(|c| c.0 == user && c.1 == password) {
        return found;
    }
    let kept: &'static (String, String) = Box::leak(Box::new((user, password)));
    seen.push(kept);
    kept
}

impl Proxy {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            credentials: None,
        }
    }

    /// With a user name and password (the password may be empty).
    pub fn with_user(addr: SocketAddr, user: String, password: String) -> Self {
        Self {
            addr,
            credentials: Some(intern(user, password)),
        }
    }

    /// The user name and password, if any.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.credentials
            .map(|(user, password)| (user.as_str(), password.as_str()))
    }
}

impl fmt::Display for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.credentials() {
            Some((user, _)) => write!(f, "{user}@{}", self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Proxy({self})")
    }
}
