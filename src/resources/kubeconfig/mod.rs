//! `ephemeral "hct_kubeconfig"`: a short-lived admin kubeconfig minted per
//! run from the cluster's Kubernetes CA, for configuring the helm and
//! kubernetes providers in the same apply that creates the cluster, without
//! storing a credential in plan or state.
//!
//! - `schema`: attributes and their documentation.
//! - `model`: checks without API calls, and decoding the configuration.
//! - `resource`: open (mint), renew (never asked for), close (nothing held).

mod model;
mod resource;
mod schema;

pub use resource::{KubeconfigEphemeral, TYPE_NAME};
