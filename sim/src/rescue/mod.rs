//! The emulated rescue system: a server that boots into rescue with SSH
//! keys runs an SSH server (on 127.0.0.1, never elsewhere) registered with
//! the proxy as port 22 of the server's public IPv4, like on Hetzner. It
//! accepts `root` with one of the keys given to `enable_rescue`, and one
//! kind of command: writing a Talos image from the Image Factory to the
//! disk (see [`command`]). Nothing runs and nothing is downloaded; the
//! image written is recorded on the server ([`DiskImage`]), and a snapshot
//! taken afterwards carries it.
//!
//! Faults (`--fault`, `POST /_sim/faults`):
//!
//! ```json
//! {"rescue": "slow_ssh", "delay_ms": 5000}
//! {"rescue": "download_fails", "count": 1, "message": "curl: (22) The requested URL returned error: 503"}
//! ```

pub mod command;
pub mod session;
pub mod ssh;
pub mod supervisor;

use serde::{Deserialize, Serialize};

use crate::resources::servers::Server;
use crate::talos::faults::ServerRef;

pub use session::{DiskImage, RescueSession};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rescue", rename_all = "snake_case", deny_unknown_fields)]
pub enum RescueFault {
    /// SSH answers only this long after the rescue system booted.
    SlowSsh {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<ServerRef>,
        delay_ms: u64,
    },
    /// The image download fails: the command exits 22 with curl's message.
    DownloadFails {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<ServerRef>,
        /// How many downloads fail; all when absent.
        #[serde(default)]
        count: Option<u32>,
        #[serde(default)]
        message: Option<String>,
    },
}

impl RescueFault {
    fn hits(&self, server: &Server) -> bool {
        let target = match self {
            Self::SlowSsh { server, .. } | Self::DownloadFails { server, .. } => server,
        };
        target.as_ref().is_none_or(|t| t.matches(server))
    }
}

/// How long after booting the server's rescue SSH comes up.
pub fn ssh_delay(faults: &[RescueFault], server: &Server) -> std::time::Duration {
    faults
        .iter()
        .filter(|f| f.hits(server))
        .map(|f| match f {
            RescueFault::SlowSsh { delay_ms, .. } => std::time::Duration::from_millis(*delay_ms),
            RescueFault::DownloadFails { .. } => std::time::Duration::ZERO,
        })
        .max()
        .unwrap_or_default()
}

/// Uses up a download failure for `server`: curl's message, if one is due.
pub fn take_download_failure(faults: &mut Vec<RescueFault>, server: &Server) -> Option<String> {
    let index = faults
        .iter()
        .position(|f| matches!(f, RescueFault::DownloadFails { .. }) && f.hits(server))?;
    let RescueFault::DownloadFails { count, message, .. } = &mut faults[index] else {
        return None;
    };
    let message = message.clone().unwrap_or_else(|| {
        "curl: (22) The requested URL returned error: 503 (injected by hct-sim)".into()
    });
    if let Some(n) = count {
        *n = n.saturating_sub(1);
        if *n == 0 {
            faults.remove(index);
        }
    }
    Some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_download_failures_are_used_up() {
        let slow: RescueFault =
            serde_json::from_str(r#"{"rescue": "slow_ssh", "delay_ms": 1500}"#).unwrap();
        let fails: RescueFault =
            serde_json::from_str(r#"{"rescue": "download_fails", "count": 2}"#).unwrap();
        assert!(serde_json::from_str::<RescueFault>(r#"{"rescue": "slow_ssh"}"#).is_err());
        let server: Server = serde_json::from_value(serde_json::json!({
            "id": 1, "name": "b", "status": "running", "created": 0,
            "server_type": "cx23", "location": "nbg1", "image": null, "primary_disk_size": 40,
            "public_ipv4": null, "public_ipv6": null, "private_net": [], "placement_group": null,
            "labels": {}, "rescue_enabled": false, "user_data": null, "ssh_keys": [],
            "delete_protected": false, "rebuild_protected": false, "boot": null, "talos": null,
        }))
        .unwrap();
        let mut faults = vec![slow, fails];
        assert_eq!(
            ssh_delay(&faults, &server),
            std::time::Duration::from_millis(1500)
        );
        assert!(take_download_failure(&mut faults, &server).is_some());
        assert!(take_download_failure(&mut faults, &server).is_some());
        assert!(take_download_failure(&mut faults, &server).is_none());
        assert_eq!(faults.len(), 1);
    }
}
