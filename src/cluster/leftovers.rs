//! Servers with a group's labels that state does not know: what they are,
//! and whether hct may touch them.
//!
//! A server carrying this cluster's secrets fingerprint (label `talos-ca`)
//! comes from a run of this state (killed before Terraform saved it): it
//! is adopted. Any other may be a live cluster's: another workspace with
//! the same cluster name, or this cluster after its state was lost. hct
//! deletes it only when it can prove it holds nothing, i.e. Talos answers
//! in maintenance mode (no config, no etcd, no secrets). A server that
//! answers configured, or does not answer, is never touched: the plan (and
//! the apply) stop with the server names and the ways out.

use crate::net::Proxy;

use futures_util::future::join_all;

use super::ClusterError;
use super::naming;
use super::record::NodeRecord;
use crate::hcloud::models::Server;
use crate::talos::api::{NodeAddress, Probe, TalosClient, Trust};

/// A server of the group that state does not know.
#[derive(Debug, Clone)]
pub struct Stranger {
    pub name: String,
    pub id: i64,
    pub found: Found,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Made with this cluster's secrets: a run of this state left it.
    Ours,
    /// Talos answers in maintenance mode: it holds nothing.
    Empty,
    /// It may be live: why hct cannot tell it is not.
    MaybeLive(String),
}

/// What `servers` of the group are that `recorded` (state) does not know.
/// `fingerprint` is this cluster's secrets fingerprint (None while not
/// known, at the plan of a new cluster); `network` the private network
/// the nodes are reached on, through `proxy`; `trust` the cluster's, to
/// recognise a node of this cluster whose labels were changed.
pub async fn strangers(
    servers: &[Server],
    recorded: &[NodeRecord],
    fingerprint: Option<&str>,
    network: i64,
    proxy: Option<Proxy>,
    trust: Option<&Trust>,
) -> Vec<Stranger> {
    let unknown = servers
        .iter()
        .filter(|s| !recorded.iter().any(|n| n.server_id == s.id));
    join_all(unknown.map(|server| async move {
        let ours = fingerprint.is_some()
            && server.labels.get(naming::SECRETS).map(String::as_str) == fingerprint;
        let found = if ours {
            Found::Ours
        } else {
            look(server, network, proxy, trust).await
        };
        Stranger {
            name: server.name.clone(),
            id: server.id,
            found,
        }
    }))
    .await
}

/// Asks a server's Talos, without a certificate, whether it runs a config.
async fn look(server: &Server, network: i64, proxy: Option<Proxy>, trust: Option<&Trust>) -> Found {
    if server.status != "running" {
        return Found::MaybeLive(format!("it is {} on Hetzner", server.status));
    }
    let Some(ip) = server.private_ip(network) else {
        return Found::MaybeLive("it is not on the cluster's network".into());
    };
    let address = NodeAddress::new(ip.into(), proxy);
    match TalosClient::probe_without_certificate(&address).await {
        Probe::Maintenance => Found::Empty,
        Probe::WantsCertificate => match trust {
            Some(trust) if TalosClient::connect(&address, trust).await.is_ok() => Found::Ours,
            _ => Found::MaybeLive("Talos runs a config of another cluster's secrets".into()),
        },
        Probe::Gone(e) => Found::MaybeLive(format!("its Talos API does not answer ({e})")),
    }
}

/// The refusal of `strangers` of `cluster` (of its `group`, or of any):
/// None when none may be live.
pub fn refusal(cluster: &str, group: Option<&str>, strangers: &[Stranger]) -> Option<ClusterError> {
    let servers: Vec<(String, String)> = strangers
        .iter()
        .filter_map(|s| match &s.found {
            Found::MaybeLive(why) => Some((s.name.clone(), why.clone())),
            _ => None,
        })
        .collect();
    (!servers.is_empty()).then(|| ClusterError::Strangers {
        cluster: cluster.to_string(),
        group: group.map(str::to_string),
        servers,
    })
}
