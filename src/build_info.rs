//! What this build of hct is: its version and the source address users put
//! in `required_providers` (a leaf: the protocol, the provider and the
//! Hetzner client's User-Agent all read it).

/// The source address users put in `required_providers`.
pub const SOURCE_ADDRESS: &str = "registry.hct.internal/hct/hct";
/// This build's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
