//! Talos API failures, named by what the user should do about them.

use crate::tf::Diagnostic;

#[derive(Debug, thiserror::Error)]
pub enum TalosError {
    #[error("{node}: cannot reach the Talos API: {reason}")]
    Unreachable { node: String, reason: String },
    #[error("{node}: the node's certificate is not signed by this cluster's OS CA ({reason})")]
    WrongCa { node: String, reason: String },
    #[error("{node}: the node did not accept hct's admin certificate ({reason})")]
    Unauthorized { node: String, reason: String },
    #[error("{node}: the node is still in maintenance mode (no configuration applied yet)")]
    Maintenance { node: String },
    #[error("{node}: bootstrap must be sent to a control-plane node, and this is a worker")]
    NotControlPlane { node: String },
    #[error("{node}: not ready yet: {message}")]
    NotReady { node: String, message: String },
    #[error("{node}: Talos rejected {call}: {code}: {message}")]
    Rejected {
        node: String,
        call: &'static str,
        code: String,
        message: String,
    },
    #[error("{node}: unexpected answer to {call}: {reason}")]
    Protocol {
        node: String,
        call: &'static str,
        reason: String,
    },
    #[error("talos credentials: {0}")]
    Credentials(String),
}

impl TalosError {
    /// Worth trying again after a while (the node is still booting).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            TalosError::Unreachable { .. } | TalosError::NotReady { .. }
        )
    }

    pub fn to_diagnostic(&self, doing: &str) -> Diagnostic {
        let advice = match self {
            TalosError::Unreachable { .. } => {
                "hct reaches nodes at their private IPs. When Terraform runs outside the private \
                 network, set talos_proxy (or HCT_TALOS_PROXY) to a SOCKS5 proxy inside it, e.g. \
                 Tailscale's userspace proxy. If the node is new, it may still be booting."
            }
            TalosError::WrongCa { .. } => {
                "Another cluster's secrets configured this node. If that cluster is yours, adopt \
                 its secrets.yaml (machine_secrets); if not, something else configured the node \
                 first: delete the server and apply again, and hct creates it anew."
            }
            TalosError::Unauthorized { .. } => {
                "The talosconfig does not belong to this node's cluster, or its certificate expired."
            }
            TalosError::Maintenance { .. } => {
                "Apply a configuration first (config_delivery = \"apply\"), or check that the \
                 server's user_data holds the machine config."
            }
            TalosError::NotControlPlane { .. } => "Send bootstrap to one control-plane node only.",
            TalosError::NotReady { .. } => {
                "Wait for the node to finish booting, then run the command again."
            }
            _ => "",
        };
        let detail = if advice.is_empty() {
            self.to_string()
        } else {
            format!("{self}.\n\n{advice}")
        };
        Diagnostic::error(format!("Talos: {doing} failed"), detail)
    }
}
