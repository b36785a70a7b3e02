//! Reaching the private network from where Terraform runs.
//!
//! - `socks5`: dialing through a SOCKS5 proxy (Tailscale's userspace proxy,
//!   an `ssh -D` bastion, hct-sim's proxy), for the Talos API, the
//!   Kubernetes API probe and the image builder's SSH.

pub mod socks5;
