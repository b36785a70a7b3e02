//! A client of the Talos machine API (apid): maintenance-mode and mTLS
//! connections, dialing through a SOCKS5 proxy, and the calls hct needs to
//! bring nodes from first boot to a bootstrapped cluster (`client`), and to
//! read the bootstrap manifests a control plane renders (`manifests`);
//! answers that come in chunks (`stream`); the etcd calls (`etcd`).

mod answers;
mod client;
pub mod error;
mod etcd;
mod manifests;
mod stream;
pub mod tls;

pub use client::{
    APID_PORT, Applied, ApplyMode, Bootstrapped, EtcdMember, EtcdMembers, MACHINE_CONFIG_PATH,
    NodeAddress, Probe, Service, TalosClient,
};
pub use error::TalosError;
pub use manifests::{MANIFEST_NAMESPACE, MANIFEST_TYPE, RenderedManifest};
pub use stream::DataStream;
pub use tls::{AdminCredentials, Trust};

/// Code generated at build time from `proto/talos_machine.proto`, and in
/// `cosi` from `proto/cosi_state.proto`.
pub mod pb {
    tonic::include_proto!("machine");

    pub mod cosi {
        tonic::include_proto!("cosi.resource");
    }
}
