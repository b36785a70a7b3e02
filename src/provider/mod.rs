//! The hct provider: its configuration and the resources and data sources it
//! serves. The protocol layer (`crate::protocol`) turns Terraform's RPCs into
//! calls on the traits here, so resource code never sees the wire. Which
//! resources hct serves is `crate::resources::provider`'s list.

pub mod action;
pub mod config;
pub mod ephemeral;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::hcloud::{Client, ClientConfig};
use crate::net::Proxy;
use crate::pace::Pace;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Schema, Value};
pub use action::{Action, Progress};
pub use config::ProviderConfig;
pub use ephemeral::{EphemeralResource, Opened};

pub use crate::build_info::{SOURCE_ADDRESS, VERSION};

/// What a resource or data source call gets besides its own values.
#[derive(Clone)]
pub struct Context {
    /// The configured provider, or None while Terraform could not configure
    /// it yet (a provider attribute depends on a resource not yet created).
    pub config: Option<Arc<ProviderConfig>>,
    /// Cancelled when Terraform asks the provider to stop (Ctrl-C).
    pub cancel: CancellationToken,
    /// The Hetzner client of this provider instance (one request budget).
    hcloud: Option<Client>,
}

impl Context {
    /// How fast waits poll and retry: the configured pace, or production's
    /// before the provider is configured.
    pub fn pace(&self) -> Pace {
        self.config.as_ref().map(|c| c.pace).unwrap_or_default()
    }

    /// The configuration, or an error that says why it is missing.
    pub fn require_config(&self) -> Result<&ProviderConfig, Diagnostic> {
        self.config.as_deref().ok_or_else(|| {
            Diagnostic::error(
                "Provider not configured",
                "The provider \"hct\" block is not known yet (one of its attributes depends on a \
                 resource that does not exist yet). Apply that resource first, e.g. with -target.",
            )
        })
    }

    /// The Hetzner Cloud client, stopping when Terraform stops us.
    pub fn hcloud(&self) -> Result<Client, Diagnostic> {
        self.require_config()?;
        self.hcloud.as_ref().map(|c| c.with_cancel(self.cancel.clone())).ok_or_else(|| {
            Diagnostic::error(
                "No Hetzner Cloud token",
                "This resource calls the Hetzner Cloud API, but no token is set. Set hcloud_token in \
                 the provider \"hct\" block or export HCLOUD_TOKEN (a read & write API token of \
                 the project).",
            )
        })
    }
}

impl Context {
    /// The SOCKS5 proxy into the private network (`talos_proxy`), resolved
    /// to an address; None when hct dials the nodes directly. The one place
    /// the setting is read: the Talos API, the Kubernetes API probe and the
    /// image builder's SSH all dial through what this returns.
    pub async fn talos_proxy(&self) -> Result<Option<Proxy>, Diagnostic> {
        let config = self.require_config()?;
        let Some(url) = &config.talos_proxy else {
            return Ok(None);
        };
        let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
        let port = url.port().unwrap_or(1080);
        let mut addresses = tokio::net::lookup_host((host, port)).await.map_err(|e| {
            Diagnostic::error(
                "Cannot resolve talos_proxy",
                format!("{host}:{port}: {e}. Check talos_proxy (or HCT_TALOS_PROXY)."),
            )
            .at(AttrPath::attr("talos_proxy"))
        })?;
        let addr = addresses.next().ok_or_else(|| {
            Diagnostic::error(
                "Cannot resolve talos_proxy",
                format!("{host}:{port} has no address. Check talos_proxy (or HCT_TALOS_PROXY)."),
            )
            .at(AttrPath::attr("talos_proxy"))
        })?;
        // Checked when the provider was configured.
        Ok(Some(match config::proxy_credentials(url) {
            Ok(Some((user, password))) => Proxy::with_user(addr, user, password),
            _ => Proxy::new(addr),
        }))
    }
}

/// A read-only data source.
#[async_trait]
pub trait DataSource: Send + Sync {
    fn type_name(&self) -> &'static str;
    fn schema(&self) -> Schema;
    /// Checks a configuration that may still hold unknown values.
    fn validate(&self, config: &Value) -> Diagnostics;
    /// Reads with a wholly known configuration; returns the full state.
    async fn read(&self, ctx: &Context, config: &Value) -> (Option<Value>, Diagnostics);
}

pub struct PlanRequest {
    /// Null when the resource is to be created.
    pub prior: Value,
    /// Terraform's proposal (config merged over prior state); null when the
    /// resource is to be destroyed.
    pub proposed: Value,
    pub config: Value,
    pub prior_private: Vec<u8>,
}

#[derive(Default)]
pub struct Plan {
    pub planned: Value,
    pub requires_replace: Vec<AttrPath>,
    pub private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

pub struct ApplyRequest {
    /// Null on create.
    pub prior: Value,
    /// Null on destroy.
    pub planned: Value,
    pub config: Value,
    pub private: Vec<u8>,
}

#[derive(Default)]
pub struct Applied {
    /// The state to record. On failure, whatever exists so far (partial
    /// state), so nothing created is ever lost.
    pub new_state: Value,
    /// The private state to record; empty keeps the one planned.
    pub private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

/// A managed resource.
#[async_trait]
pub trait Resource: Send + Sync {
    fn type_name(&self) -> &'static str;
    fn schema(&self) -> Schema;
    fn validate(&self, config: &Value) -> Diagnostics;
    async fn plan(&self, ctx: &Context, request: PlanRequest) -> Plan;
    async fn apply(&self, ctx: &Context, request: ApplyRequest) -> Applied;
    /// Refreshes state; `None` means the object is gone (Terraform then plans
    /// to create it again). `private` is the resource's private state, which
    /// it may update.
    async fn read(
        &self,
        ctx: &Context,
        state: Value,
        private: &mut Vec<u8>,
    ) -> (Option<Value>, Diagnostics);
    /// State for `terraform import` of `id`.
    async fn import(&self, ctx: &Context, id: &str) -> Result<Value, Diagnostics>;
    /// Upgrades state stored by an older schema version to the current one,
    /// as JSON. Resources whose schema never changed keep the default.
    fn upgrade_state(
        &self,
        version: i64,
        state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        let current = self.schema().version;
        if version == current {
            Ok(state)
        } else {
            Err(Diagnostic::error(
                "Unsupported state version",
                format!(
                    "{} state has schema version {version}, this hct build knows version \
                     {current}. Use the hct release that wrote this state, or a newer one.",
                    self.type_name()
                ),
            )
            .into())
        }
    }
}

/// The provider: its registered types, its configuration once Terraform has
/// sent it, and the stop signal shared by in-flight calls.
pub struct Provider {
    data_sources: BTreeMap<&'static str, Arc<dyn DataSource>>,
    resources: BTreeMap<&'static str, Arc<dyn Resource>>,
    ephemeral_resources: BTreeMap<&'static str, Arc<dyn EphemeralResource>>,
    actions: BTreeMap<&'static str, Arc<dyn Action>>,
    config: RwLock<Option<Arc<ProviderConfig>>>,
    hcloud: RwLock<Option<Client>>,
    stop: Mutex<CancellationToken>,
}

impl Provider {
    pub fn new(data_sources: Vec<Arc<dyn DataSource>>, resources: Vec<Arc<dyn Resource>>) -> Self {
        Self {
            data_sources: data_sources
                .into_iter()
                .map(|d| (d.type_name(), d))
                .collect(),
            resources: resources.into_iter().map(|r| (r.type_name(), r)).collect(),
            ephemeral_resources: BTreeMap::new(),
            actions: BTreeMap::new(),
            config: RwLock::new(None),
            hcloud: RwLock::new(None),
            stop: Mutex::new(CancellationToken::new()),
        }
    }

    /// Adds ephemeral resources to those served.
    pub fn with_ephemeral_resources(mut self, resources: Vec<Arc<dyn EphemeralResource>>) -> Self {
        self.ephemeral_resources
            .extend(resources.into_iter().map(|r| (r.type_name(), r)));
        self
    }

    /// Adds actions to those served.
    pub fn with_actions(mut self, actions: Vec<Arc<dyn Action>>) -> Self {
        self.actions
            .extend(actions.into_iter().map(|a| (a.type_name(), a)));
        self
    }

    pub fn schema(&self) -> Schema {
        config::schema()
    }

    pub fn data_sources(&self) -> impl Iterator<Item = &Arc<dyn DataSource>> {
        self.data_sources.values()
    }

    pub fn resources(&self) -> impl Iterator<Item = &Arc<dyn Resource>> {
        self.resources.values()
    }

    pub fn ephemeral_resources(&self) -> impl Iterator<Item = &Arc<dyn EphemeralResource>> {
        self.ephemeral_resources.values()
    }

    pub fn ephemeral_resource(
        &self,
        type_name: &str,
    ) -> Result<&Arc<dyn EphemeralResource>, Diagnostic> {
        self.ephemeral_resources
            .get(type_name)
            .ok_or_else(|| unknown_type("ephemeral resource", type_name))
    }

    pub fn actions(&self) -> impl Iterator<Item = &Arc<dyn Action>> {
        self.actions.values()
    }

    pub fn action(&self, type_name: &str) -> Result<&Arc<dyn Action>, Diagnostic> {
        self.actions
            .get(type_name)
            .ok_or_else(|| unknown_type("action", type_name))
    }

    pub fn data_source(&self, type_name: &str) -> Result<&Arc<dyn DataSource>, Diagnostic> {
        self.data_sources
            .get(type_name)
            .ok_or_else(|| unknown_type("data source", type_name))
    }

    pub fn resource(&self, type_name: &str) -> Result<&Arc<dyn Resource>, Diagnostic> {
        self.resources
            .get(type_name)
            .ok_or_else(|| unknown_type("resource", type_name))
    }

    /// Takes the resolved configuration; builds the Hetzner client once, so
    /// every resource of this provider instance shares its request budget.
    pub fn configure(&self, config: Option<ProviderConfig>) -> Result<(), Diagnostic> {
        let client = match config
            .as_ref()
            .and_then(|c| c.hcloud_token.clone().map(|token| (c, token)))
        {
            Some((config, token)) => Some(
                Client::new(ClientConfig {
                    endpoint: config.hcloud_endpoint.clone(),
                    token,
                    pace: config.pace,
                })
                .map_err(|e| e.to_diagnostic("setting up the API client"))?,
            ),
            None => None,
        };
        *self.hcloud.write().unwrap_or_else(|e| e.into_inner()) = client;
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config.map(Arc::new);
        Ok(())
    }

    pub fn context(&self) -> Context {
        Context {
            config: self
                .config
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            cancel: self.stop.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            hcloud: self
                .hcloud
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    /// Cancels everything in flight (Terraform's StopProvider, sent on
    /// Ctrl-C). Calls that start afterwards get a fresh token.
    pub fn stop(&self) {
        let mut token = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        token.cancel();
        *token = CancellationToken::new();
    }
}

fn unknown_type(kind: &str, type_name: &str) -> Diagnostic {
    Diagnostic::error(
        format!("Unknown {kind} type {type_name:?}"),
        format!(
            "This build of hct ({VERSION}) has no {kind} {type_name:?}. Check the name, or upgrade hct."
        ),
    )
}
