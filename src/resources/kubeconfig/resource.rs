//! `hct_kubeconfig`'s lifecycle: open mints the kubeconfig offline from the
//! Kubernetes CA in `machine_secrets` (`talos::client_config`, the one home of
//! hct's kubeconfigs) and takes it apart into the provider credentials.
//! Nothing is held, so close has nothing to release, and the certificate is
//! made to outlast the run, so renewal is never asked for.

use std::time::SystemTime;

use async_trait::async_trait;
use tracing::info;

use super::{model, schema};
use crate::provider::{Context, EphemeralResource, Opened};
use crate::talos::client_config;
use crate::tf::{Diagnostic, Diagnostics, Schema, Value};

pub const TYPE_NAME: &str = "hct_kubeconfig";

pub struct KubeconfigEphemeral;

fn mint(config: &Value, proxy_url: Option<String>) -> Result<Value, Diagnostic> {
    let input = model::decode(config)?;
    let settings = &input.settings;
    let now = SystemTime::now();
    let kubeconfig = client_config::admin_kubeconfig_valid_for(
        &settings.cluster_name,
        &settings.plan,
        settings.cluster_secrets().map_err(|e| e.to_diagnostic())?,
        now,
        input.validity,
    )
    .map_err(|e| Diagnostic::error("Could not issue the kubeconfig", e.to_string()))?;
    let credentials =
        client_config::kubeconfig_credentials(kubeconfig.as_str()).ok_or_else(|| {
            Diagnostic::error(
                "Could not issue the kubeconfig",
                "The kubeconfig hct made has no cluster or user entry. This is a bug in hct.",
            )
        })?;
    info!(
        cluster = %settings.cluster_name,
        validity = %crate::duration::format(input.validity),
        "issued a short-lived admin kubeconfig"
    );
    let text = match &proxy_url {
        Some(proxy) => client_config::with_proxy_url(kubeconfig.as_str(), proxy)
            .unwrap_or_else(|| kubeconfig.as_str().to_string()),
        None => kubeconfig.as_str().to_string(),
    };
    let mut result = config.clone();
    if let Value::Map(items) = &mut result {
        let expires = humantime::format_rfc3339_seconds(kubeconfig.expires()).to_string();
        for (name, value) in [
            ("host", credentials.host),
            ("cluster_ca_certificate", credentials.cluster_ca_certificate),
            ("client_certificate", credentials.client_certificate),
            ("client_key", credentials.client_key),
            ("kubeconfig", text),
            ("expires_at", expires),
        ] {
            items.insert(name.into(), Value::from(value));
        }
        items.insert("proxy_url".into(), Value::from(proxy_url));
    }
    Ok(result)
}

#[async_trait]
impl EphemeralResource for KubeconfigEphemeral {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema::schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        model::validate(config)
    }

    async fn open(&self, ctx: &Context, config: &Value) -> Opened {
        let proxy_url = ctx
            .config
            .as_ref()
            .and_then(|c| c.talos_proxy.as_ref())
            .map(ToString::to_string);
        match mint(config, proxy_url) {
            Ok(result) => Opened {
                result,
                ..Default::default()
            },
            Err(d) => Opened {
                diagnostics: d.into(),
                ..Default::default()
            },
        }
    }

    async fn renew(&self, _: &Context, _: &[u8]) -> Opened {
        Opened {
            diagnostics: Diagnostic::error(
                "hct_kubeconfig is not renewable",
                "hct never asks for a renewal of hct_kubeconfig (its certificate outlasts the \
                 run); a renewal request means the CLI is confused. Run the command again.",
            )
            .into(),
            ..Default::default()
        }
    }

    async fn close(&self, _: &Context, _: &[u8]) -> Diagnostics {
        // Minting held nothing open (no lease, no session): nothing to release.
        Diagnostics::new()
    }
}
