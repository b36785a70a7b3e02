//! The `tfplugin6.Provider` gRPC service: decodes each request, calls the
//! provider, encodes the answer. Problems become diagnostics, not gRPC
//! errors, so Terraform shows them with their attribute paths.

use std::future::Future;
use std::sync::Arc;

use tonic::{Request, Response, Status};
use tracing::{debug, info};

use super::convert::{self, decode, encode};
use super::pb::tfplugin6::{self as pb, provider_server};
use crate::provider::config::{self, ProcessEnvironment};
use crate::provider::{ApplyRequest, Context, PlanRequest, Provider};
use crate::tf::{Diagnostic, Diagnostics, Value};

pub struct ProviderService {
    provider: Arc<Provider>,
}

impl ProviderService {
    pub fn new(provider: Arc<Provider>) -> Self {
        Self { provider }
    }
}

type RpcResult<T> = Result<Response<T>, Status>;

/// Runs `work` until it finishes or Terraform asks the provider to stop.
async fn until_stopped<T>(
    ctx: &Context,
    work: impl Future<Output = T>,
    stopped: impl FnOnce(Diagnostic) -> T,
) -> T {
    tokio::select! {
        result = work => result,
        () = ctx.cancel.cancelled() => stopped(Diagnostic::error(
            "Stopped",
            "Terraform asked hct to stop (Ctrl-C) before this operation finished. Run the \
             command again to continue; everything created so far is in the state.",
        )),
    }
}

/// How long a resource may take to return its partial state after a stop.
const APPLY_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Like [`until_stopped`], but after a stop `work` gets [`APPLY_STOP_GRACE`]
/// to return on its own: an apply that notices the stop reports the state it
/// reached (servers it created), which must not be thrown away.
async fn until_stopped_with_grace<T>(
    ctx: &Context,
    work: impl Future<Output = T>,
    stopped: impl FnOnce(Diagnostic) -> T,
) -> T {
    tokio::pin!(work);
    tokio::select! {
        result = &mut work => return result,
        () = ctx.cancel.cancelled() => {}
    }
    match tokio::time::timeout(APPLY_STOP_GRACE, work).await {
        Ok(result) => result,
        Err(_) => stopped(Diagnostic::error(
            "Stopped",
            "Terraform asked hct to stop (Ctrl-C) and the operation did not wind down in time. \
             Run the command again; hct adopts what it had created.",
        )),
    }
}

fn unsupported(rpc: &str) -> Status {
    Status::unimplemented(format!("hct does not implement the {rpc} RPC"))
}

/// Unwraps a step's result, or returns its diagnostics as the RPC's answer.
macro_rules! or_answer {
    ($result:expr, $answer:expr) => {
        match $result {
            Ok(value) => value,
            Err(diagnostic) => return Ok(Response::new($answer(Diagnostics::from(diagnostic)))),
        }
    };
}

#[tonic::async_trait]
impl provider_server::Provider for ProviderService {
    async fn get_metadata(
        &self,
        _: Request<pb::get_metadata::Request>,
    ) -> RpcResult<pb::get_metadata::Response> {
        Ok(Response::new(pb::get_metadata::Response {
            server_capabilities: Some(capabilities()),
            diagnostics: vec![],
            data_sources: self
                .provider
                .data_sources()
                .map(|d| pb::get_metadata::DataSourceMetadata {
                    type_name: d.type_name().into(),
                })
                .collect(),
            resources: self
                .provider
                .resources()
                .map(|r| pb::get_metadata::ResourceMetadata {
                    type_name: r.type_name().into(),
                })
                .collect(),
        }))
    }

    async fn get_provider_schema(
        &self,
        _: Request<pb::get_provider_schema::Request>,
    ) -> RpcResult<pb::get_provider_schema::Response> {
        Ok(Response::new(pb::get_provider_schema::Response {
            provider: Some(convert::schema(&self.provider.schema())),
            resource_schemas: self
                .provider
                .resources()
                .map(|r| (r.type_name().to_string(), convert::schema(&r.schema())))
                .collect(),
            data_source_schemas: self
                .provider
                .data_sources()
                .map(|d| (d.type_name().to_string(), convert::schema(&d.schema())))
                .collect(),
            diagnostics: vec![],
            provider_meta: None,
            server_capabilities: Some(capabilities()),
        }))
    }

    async fn validate_provider_config(
        &self,
        request: Request<pb::validate_provider_config::Request>,
    ) -> RpcResult<pb::validate_provider_config::Response> {
        let answer = |d: Diagnostics| pb::validate_provider_config::Response {
            diagnostics: convert::diagnostics(d),
        };
        let ty = self.provider.schema().value_type();
        let config = or_answer!(decode(request.get_ref().config.as_ref(), &ty), answer);
        Ok(Response::new(answer(config::validate(&config))))
    }

    async fn configure_provider(
        &self,
        request: Request<pb::configure_provider::Request>,
    ) -> RpcResult<pb::configure_provider::Response> {
        let answer = |d: Diagnostics| pb::configure_provider::Response {
            diagnostics: convert::diagnostics(d),
        };
        let request = request.into_inner();
        info!(terraform_version = %request.terraform_version, "configuring hct {}", crate::provider::VERSION);
        let ty = self.provider.schema().value_type();
        let config = or_answer!(decode(request.config.as_ref(), &ty), answer);
        match config::resolve(&config, &ProcessEnvironment) {
            Ok(resolved) => {
                if let Some(resolved) = &resolved {
                    debug!(endpoint = %resolved.hcloud_endpoint, proxy = resolved.talos_proxy.is_some(), "provider configured");
                }
                let diagnostics = match self.provider.configure(resolved) {
                    Ok(()) => Diagnostics::new(),
                    Err(diagnostic) => diagnostic.into(),
                };
                Ok(Response::new(answer(diagnostics)))
            }
            Err(diagnostics) => Ok(Response::new(answer(diagnostics))),
        }
    }

    async fn validate_resource_config(
        &self,
        request: Request<pb::validate_resource_config::Request>,
    ) -> RpcResult<pb::validate_resource_config::Response> {
        let answer = |d: Diagnostics| pb::validate_resource_config::Response {
            diagnostics: convert::diagnostics(d),
        };
        let request = request.into_inner();
        let resource = or_answer!(self.provider.resource(&request.type_name), answer);
        let config = or_answer!(
            decode(request.config.as_ref(), &resource.schema().value_type()),
            answer
        );
        Ok(Response::new(answer(resource.validate(&config))))
    }

    async fn validate_data_resource_config(
        &self,
        request: Request<pb::validate_data_resource_config::Request>,
    ) -> RpcResult<pb::validate_data_resource_config::Response> {
        let answer = |d: Diagnostics| pb::validate_data_resource_config::Response {
            diagnostics: convert::diagnostics(d),
        };
        let request = request.into_inner();
        let data_source = or_answer!(self.provider.data_source(&request.type_name), answer);
        let config = or_answer!(
            decode(request.config.as_ref(), &data_source.schema().value_type()),
            answer
        );
        Ok(Response::new(answer(data_source.validate(&config))))
    }

    async fn read_data_source(
        &self,
        request: Request<pb::read_data_source::Request>,
    ) -> RpcResult<pb::read_data_source::Response> {
        let answer = |d: Diagnostics| pb::read_data_source::Response {
            state: None,
            diagnostics: convert::diagnostics(d),
        };
        let request = request.into_inner();
        let data_source = or_answer!(self.provider.data_source(&request.type_name), answer);
        let ty = data_source.schema().value_type();
        let config = or_answer!(decode(request.config.as_ref(), &ty), answer);
        let ctx = self.provider.context();
        let (state, mut diagnostics) =
            until_stopped(&ctx, data_source.read(&ctx, &config), |d| (None, d.into())).await;
        let state = match state {
            Some(state) if !diagnostics.has_errors() => match encode(state, &ty) {
                Ok(encoded) => Some(encoded),
                Err(d) => {
                    diagnostics.push(d);
                    None
                }
            },
            _ => None,
        };
        Ok(Response::new(pb::read_data_source::Response {
            state,
            diagnostics: convert::diagnostics(diagnostics),
        }))
    }

    async fn upgrade_resource_state(
        &self,
        request: Request<pb::upgrade_resource_state::Request>,
    ) -> RpcResult<pb::upgrade_resource_state::Response> {
        let answer = |d: Diagnostics| pb::upgrade_resource_state::Response {
            upgraded_state: None,
            diagnostics: convert::diagnostics(d),
        };
        let request = request.into_inner();
        let resource = or_answer!(self.provider.resource(&request.type_name), answer);
        let raw = request.raw_state.unwrap_or_default();
        if raw.json.is_empty() {
            return Ok(Response::new(answer(
                Diagnostic::error(
                    "Unsupported state format",
                    "The stored state uses the flatmap format of Terraform 0.11, which hct never wrote.",
                )
                .into(),
            )));
        }
        let stored: serde_json::Value = or_answer!(
            serde_json::from_slice(&raw.json).map_err(|e| Diagnostic::error(
                "Corrupt state",
                format!("The stored state is not JSON: {e}")
            )),
            answer
        );
        let upgraded = match resource.upgrade_state(request.version, stored) {
            Ok(upgraded) => upgraded,
            Err(diagnostics) => return Ok(Response::new(answer(diagnostics))),
        };
        let ty = resource.schema().value_type();
        let value = or_answer!(
            crate::tf::json::from_json(&upgraded, &ty).map_err(|e| Diagnostic::error(
                "State does not match the schema",
                format!(
                    "{} state could not be read after upgrading: {e}",
                    request.type_name
                )
            )),
            answer
        );
        let upgraded_state = or_answer!(encode(value, &ty), answer);
        Ok(Response::new(pb::upgrade_resource_state::Response {
            upgraded_state: Some(upgraded_state),
            diagnostics: vec![],
        }))
    }

    async fn read_resource(
        &self,
        request: Request<pb::read_resource::Request>,
    ) -> RpcResult<pb::read_resource::Response> {
        let request = request.into_inner();
        let answer = |d: Diagnostics| pb::read_resource::Response {
            new_state: None,
            diagnostics: convert::diagnostics(d),
            private: vec![],
        };
        let resource = or_answer!(self.provider.resource(&request.type_name), answer);
        let ty = resource.schema().value_type();
        let state = or_answer!(decode(request.current_state.as_ref(), &ty), answer);
        let ctx = self.provider.context();
        let private = request.private.clone();
        let (new_state, mut diagnostics) =
            until_stopped(&ctx, resource.read(&ctx, state, request.private), |d| {
                (None, d.into())
            })
            .await;
        // When the read failed, keep what Terraform had; None (gone) is a null state.
        let new_state = if diagnostics.has_errors() {
            request.current_state
        } else {
            match encode(new_state.unwrap_or(Value::Null), &ty) {
                Ok(encoded) => Some(encoded),
                Err(d) => {
                    diagnostics.push(d);
                    request.current_state
                }
            }
        };
        Ok(Response::new(pb::read_resource::Response {
            new_state,
            diagnostics: convert::diagnostics(diagnostics),
            private,
        }))
    }

    async fn plan_resource_change(
        &self,
        request: Request<pb::plan_resource_change::Request>,
    ) -> RpcResult<pb::plan_resource_change::Response> {
        let request = request.into_inner();
        let answer = |d: Diagnostics| pb::plan_resource_change::Response {
            planned_state: None,
            requires_replace: vec![],
            planned_private: vec![],
            diagnostics: convert::diagnostics(d),
        };
        let resource = or_answer!(self.provider.resource(&request.type_name), answer);
        let ty = resource.schema().value_type();
        let plan_request = PlanRequest {
            prior: or_answer!(decode(request.prior_state.as_ref(), &ty), answer),
            proposed: or_answer!(decode(request.proposed_new_state.as_ref(), &ty), answer),
            config: or_answer!(decode(request.config.as_ref(), &ty), answer),
            prior_private: request.prior_private,
        };
        let ctx = self.provider.context();
        let plan = until_stopped(&ctx, resource.plan(&ctx, plan_request), |d| {
            crate::provider::Plan {
                diagnostics: d.into(),
                ..Default::default()
            }
        })
        .await;
        let mut diagnostics = plan.diagnostics;
        let planned_state = if diagnostics.has_errors() {
            None
        } else {
            match encode(plan.planned, &ty) {
                Ok(encoded) => Some(encoded),
                Err(d) => {
                    diagnostics.push(d);
                    None
                }
            }
        };
        Ok(Response::new(pb::plan_resource_change::Response {
            planned_state,
            requires_replace: plan
                .requires_replace
                .iter()
                .map(convert::attribute_path)
                .collect(),
            planned_private: plan.private,
            diagnostics: convert::diagnostics(diagnostics),
        }))
    }

    async fn apply_resource_change(
        &self,
        request: Request<pb::apply_resource_change::Request>,
    ) -> RpcResult<pb::apply_resource_change::Response> {
        let request = request.into_inner();
        let answer = |d: Diagnostics| pb::apply_resource_change::Response {
            new_state: None,
            private: vec![],
            diagnostics: convert::diagnostics(d),
        };
        let resource = or_answer!(self.provider.resource(&request.type_name), answer);
        let ty = resource.schema().value_type();
        let prior = or_answer!(decode(request.prior_state.as_ref(), &ty), answer);
        let apply_request = ApplyRequest {
            prior: prior.clone(),
            planned: or_answer!(decode(request.planned_state.as_ref(), &ty), answer),
            config: or_answer!(decode(request.config.as_ref(), &ty), answer),
            private: request.planned_private,
        };
        let ctx = self.provider.context();
        // A stop keeps the prior state: the resource reports partial state itself
        // when it notices the cancellation; this fallback only covers a resource
        // that never returned.
        let applied = until_stopped_with_grace(&ctx, resource.apply(&ctx, apply_request), |d| {
            crate::provider::Applied {
                new_state: prior,
                private: vec![],
                diagnostics: d.into(),
            }
        })
        .await;
        let mut diagnostics = applied.diagnostics;
        let new_state = match encode(applied.new_state, &ty) {
            Ok(encoded) => Some(encoded),
            Err(d) => {
                diagnostics.push(d);
                None
            }
        };
        Ok(Response::new(pb::apply_resource_change::Response {
            new_state,
            private: applied.private,
            diagnostics: convert::diagnostics(diagnostics),
        }))
    }

    async fn import_resource_state(
        &self,
        request: Request<pb::import_resource_state::Request>,
    ) -> RpcResult<pb::import_resource_state::Response> {
        let request = request.into_inner();
        let answer = |d: Diagnostics| pb::import_resource_state::Response {
            imported_resources: vec![],
            diagnostics: convert::diagnostics(d),
        };
        let resource = or_answer!(self.provider.resource(&request.type_name), answer);
        let ty = resource.schema().value_type();
        let ctx = self.provider.context();
        let imported =
            until_stopped(&ctx, resource.import(&ctx, &request.id), |d| Err(d.into())).await;
        let state = match imported {
            Ok(state) => or_answer!(encode(state, &ty), answer),
            Err(diagnostics) => return Ok(Response::new(answer(diagnostics))),
        };
        Ok(Response::new(pb::import_resource_state::Response {
            imported_resources: vec![pb::import_resource_state::ImportedResource {
                type_name: request.type_name,
                state: Some(state),
                private: vec![],
            }],
            diagnostics: vec![],
        }))
    }

    async fn stop_provider(
        &self,
        _: Request<pb::stop_provider::Request>,
    ) -> RpcResult<pb::stop_provider::Response> {
        info!("Terraform asked hct to stop: cancelling work in flight");
        self.provider.stop();
        Ok(Response::new(pb::stop_provider::Response {
            error: String::new(),
        }))
    }

    async fn get_resource_identity_schemas(
        &self,
        _: Request<pb::Unsupported>,
    ) -> RpcResult<pb::Unsupported> {
        Err(unsupported("GetResourceIdentitySchemas"))
    }

    async fn upgrade_resource_identity(
        &self,
        _: Request<pb::Unsupported>,
    ) -> RpcResult<pb::Unsupported> {
        Err(unsupported("UpgradeResourceIdentity"))
    }

    async fn move_resource_state(&self, _: Request<pb::Unsupported>) -> RpcResult<pb::Unsupported> {
        Err(unsupported("MoveResourceState"))
    }

    async fn validate_ephemeral_resource_config(
        &self,
        _: Request<pb::Unsupported>,
    ) -> RpcResult<pb::Unsupported> {
        Err(unsupported("ValidateEphemeralResourceConfig"))
    }

    async fn open_ephemeral_resource(
        &self,
        _: Request<pb::Unsupported>,
    ) -> RpcResult<pb::Unsupported> {
        Err(unsupported("OpenEphemeralResource"))
    }

    async fn renew_ephemeral_resource(
        &self,
        _: Request<pb::Unsupported>,
    ) -> RpcResult<pb::Unsupported> {
        Err(unsupported("RenewEphemeralResource"))
    }

    async fn close_ephemeral_resource(
        &self,
        _: Request<pb::Unsupported>,
    ) -> RpcResult<pb::Unsupported> {
        Err(unsupported("CloseEphemeralResource"))
    }

    async fn get_functions(&self, _: Request<pb::Unsupported>) -> RpcResult<pb::Unsupported> {
        Err(unsupported("GetFunctions"))
    }

    async fn call_function(&self, _: Request<pb::Unsupported>) -> RpcResult<pb::Unsupported> {
        Err(unsupported("CallFunction"))
    }
}

fn capabilities() -> pb::ServerCapabilities {
    pb::ServerCapabilities {
        plan_destroy: false,
        get_provider_schema_optional: false,
        move_resource_state: false,
    }
}
