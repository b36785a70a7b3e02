//! hct-sim from the outside: its Hetzner API over HTTP, the catalog, the
//! public-network resources, load balancers, the SOCKS5 proxy, and the
//! emulated Talos and Kubernetes APIs.
//! One test target, so that the crate graph is linked once.

mod common;

mod catalog_api;

mod http_api;
mod load_balancers_api;
mod protection;
mod public_net_api;
mod server_actions;
mod socks5_proxy;
mod talos_apid;
mod talos_kube_api;
