//! SSH to the builder's rescue system: a throwaway Ed25519 key, a
//! connection (direct, or through the SOCKS5 proxy), one command with its
//! exit status and the tail of its output.
//!
//! The rescue system's host key is new on every boot and Hetzner does not
//! publish it, so it cannot be verified; hct accepts it and logs its
//! fingerprint. Nothing secret crosses the connection: the private key only
//! signs, and the command and its output name public URLs.

use std::fmt;
use std::net::SocketAddr;

use crate::net::Proxy;
use std::sync::Arc;
use std::time::Duration;

use russh::ChannelMsg;
use russh::keys::ssh_key::private::{Ed25519Keypair, Ed25519PrivateKey};
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg};
use tokio::net::TcpStream;
use tracing::debug;

/// How much of the command's output a failure reports.
const TAIL_BYTES: usize = 2048;

/// The temporary key of one build. Its private half never leaves memory and
/// never prints.
pub struct BuilderKey {
    private: Arc<PrivateKey>,
    public: String,
}

impl BuilderKey {
    pub fn generate(comment: &str) -> Result<Self, String> {
        let mut seed = [0u8; Ed25519PrivateKey::BYTE_SIZE];
        getrandom::fill(&mut seed).map_err(|e| format!("no randomness for the SSH key: {e}"))?;
        let keypair = Ed25519Keypair::from(Ed25519PrivateKey::from_bytes(&seed));
        seed.fill(0);
        let mut private = PrivateKey::from(keypair);
        private.set_comment(comment);
        let public = private
            .public_key()
            .to_openssh()
            .map_err(|e| format!("encoding the SSH public key: {e}"))?;
        Ok(Self {
            private: Arc::new(private),
            public,
        })
    }

    /// `ssh-ed25519 AAAA… comment`
    pub fn public_openssh(&self) -> &str {
        &self.public
    }

    pub fn fingerprint(&self) -> String {
        self.private
            .public_key()
            .fingerprint(HashAlg::Sha256)
            .to_string()
    }
}

impl fmt::Debug for BuilderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuilderKey({})", self.fingerprint())
    }
}

/// How TCP reaches the builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Direct,
    Socks5(Proxy),
}

/// Why an attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshError {
    /// No TCP connection or no SSH handshake (rescue still booting).
    Unreachable(String),
    /// The server refused the key.
    Rejected,
    /// The session broke or the command could not start.
    Session(String),
}

impl fmt::Display for SshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SshError::Unreachable(why) => write!(f, "not reachable: {why}"),
            SshError::Rejected => f.write_str("the rescue system rejected the temporary SSH key"),
            SshError::Session(why) => write!(f, "SSH session failed: {why}"),
        }
    }
}

/// What the command left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// None when the server closed the channel without an exit status.
    pub status: Option<u32>,
    pub stdout_tail: String,
    pub stderr_tail: String,
}

struct Client {
    host_key: Option<String>,
}

impl russh::client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &russh::keys::PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        // Rescue host keys are fresh per boot and unpublished: see the module docs.
        let fingerprint = key.public_key().fingerprint(HashAlg::Sha256).to_string();
        debug!("talos image build: rescue host key {fingerprint}");
        self.host_key = Some(fingerprint);
        Ok(true)
    }
}

/// A logged-in session.
pub struct Session {
    handle: russh::client::Handle<Client>,
}

/// Connects and logs in as root; `timeout` bounds the whole attempt.
pub async fn connect(
    target: SocketAddr,
    route: Route,
    key: &BuilderKey,
    timeout: Duration,
) -> Result<Session, SshError> {
    tokio::time::timeout(timeout, connect_inner(target, route, key))
        .await
        .unwrap_or_else(|_| {
            Err(SshError::Unreachable(format!(
                "no SSH handshake within {}",
                crate::duration::format(timeout)
            )))
        })
}

async fn connect_inner(
    target: SocketAddr,
    route: Route,
    key: &BuilderKey,
) -> Result<Session, SshError> {
    let stream = match route {
        Route::Direct => TcpStream::connect(target).await,
        Route::Socks5(proxy) => crate::net::socks5::connect(proxy, target).await,
    }
    .map_err(|e| SshError::Unreachable(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let config = Arc::new(russh::client::Config {
        inactivity_timeout: Some(Duration::from_secs(900)),
        keepalive_interval: Some(Duration::from_secs(15)),
        ..Default::default()
    });
    let mut handle = russh::client::connect_stream(config, stream, Client { host_key: None })
        .await
        .map_err(|e| SshError::Unreachable(format!("SSH handshake: {e}")))?;
    let auth = handle
        .authenticate_publickey(
            "root",
            PrivateKeyWithHashAlg::new(key.private.clone(), None),
        )
        .await
        .map_err(|e| SshError::Unreachable(format!("SSH authentication: {e}")))?;
    if !auth.success() {
        return Err(SshError::Rejected);
    }
    Ok(Session { handle })
}

impl Session {
    /// Runs `command`, collecting the tails of its output.
    pub async fn run(&mut self, command: &str) -> Result<Outcome, SshError> {
        let mut channel = self
            .handle
            .channel_open_session()
            .await
            .map_err(|e| SshError::Session(format!("opening a channel: {e}")))?;
        channel
            .exec(true, command)
            .await
            .map_err(|e| SshError::Session(format!("starting the command: {e}")))?;
        let mut stdout = Tail::default();
        let mut stderr = Tail::default();
        let mut status = None;
        while let Some(message) = channel.wait().await {
            match message {
                ChannelMsg::Data { data } => stdout.push(&data),
                ChannelMsg::ExtendedData { data, ext: 1 } => stderr.push(&data),
                ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
                ChannelMsg::Failure => {
                    return Err(SshError::Session(
                        "the server refused to run the command".into(),
                    ));
                }
                other => debug!("talos image build: ssh channel message {other:?}"),
            }
        }
        Ok(Outcome {
            status,
            stdout_tail: stdout.text(),
            stderr_tail: stderr.text(),
        })
    }

    pub async fn close(self) {
        let _ = self
            .handle
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
    }
}

/// The last bytes of a stream.
#[derive(Default)]
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.0.extend_from_slice(data);
        if self.0.len() > TAIL_BYTES {
            self.0.drain(..self.0.len() - TAIL_BYTES);
        }
    }

    /// Printable text: control characters other than newlines and tabs removed.
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0)
            .chars()
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect::<String>()
            .trim()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_ed25519_and_never_print_their_secret() {
        let key = BuilderKey::generate("hct-test").unwrap();
        assert!(key.public_openssh().starts_with("ssh-ed25519 AAAA"));
        assert!(key.public_openssh().ends_with(" hct-test"));
        let other = BuilderKey::generate("hct-test").unwrap();
        assert_ne!(key.public_openssh(), other.public_openssh());
        let printed = format!("{key:?}");
        assert!(printed.starts_with("BuilderKey(SHA256:"), "{printed}");
        let secret = key.private.to_openssh(Default::default()).unwrap();
        assert!(!printed.contains(secret.as_str()));
    }

    #[test]
    fn tails_keep_the_end_and_drop_control_characters() {
        let mut tail = Tail::default();
        tail.push(&vec![b'a'; 5000]);
        tail.push(b"\x1b[31mcurl: (22) error\r\n");
        let text = tail.text();
        assert!(text.ends_with("curl: (22) error"), "{text}");
        assert!(text.len() <= TAIL_BYTES);
        assert!(!text.contains('\x1b'));
    }
}
