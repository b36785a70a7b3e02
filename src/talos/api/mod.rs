//! A client of the Talos machine API (apid): maintenance-mode and mTLS
//! connections, dialing through a SOCKS5 proxy, and the calls hct needs to
//! bring nodes from first boot to a bootstrapped cluster.

mod answers;
mod client;
pub mod error;
pub mod tls;

pub use client::{
    APID_PORT, Applied, ApplyMode, Bootstrapped, EtcdMember, MACHINE_CONFIG_PATH, NodeAddress,
    Service, TalosClient,
};
pub use error::TalosError;
pub use tls::{AdminCredentials, Trust};

/// Code generated at build time from `proto/talos_machine.proto`.
pub mod pb {
    tonic::include_proto!("machine");
}
