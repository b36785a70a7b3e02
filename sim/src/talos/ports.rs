//! The TCP ports of an emulated control plane that other nodes and the
//! load balancers in front of it use; a leaf, so that every module can name
//! them.

/// The Kubernetes API server.
pub const KUBE_API_PORT: u16 = 6443;

/// trustd, which signs workers' certificates.
pub const TRUSTD_PORT: u16 = 50001;
