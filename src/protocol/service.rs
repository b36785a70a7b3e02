//! The `tfplugin6.Provider` gRPC service: decodes each request, calls the
//! provider, encodes the answer. Problems become diagnostics, not gRPC
//! errors, so Terraform shows them with their attribute paths.
//!
//! This file holds the service and the RPCs hct does not implement; the
//! others live by concern:
//! - `provider_rpcs`: metadata, schemas, the provider block, data sources.
//! - `resource_rpcs`: managed resources (validate, upgrade, read, plan,
//!   apply, import).
//! - `ephemeral_rpcs`: ephemeral resources (validate, open, renew, close).
//! - `action_rpcs`: actions (validate, plan, invoke).
//! - `answer`: what they share: the result type, answering with
//!   diagnostics, stopping on Ctrl-C.

mod action_rpcs;
mod answer;
mod ephemeral_rpcs;
mod provider_rpcs;
mod resource_rpcs;

use std::sync::Arc;

use tonic::{Request, Response, Status};
use tracing::info;

use self::answer::RpcResult;
use super::pb::tfplugin6::{self as pb, provider_server};
use crate::provider::Provider;

pub struct ProviderService {
    provider: Arc<Provider>,
}

impl ProviderService {
    pub fn new(provider: Arc<Provider>) -> Self {
        Self { provider }
    }
}

fn unsupported(rpc: &str) -> Status {
    Status::unimplemented(format!("hct does not implement the {rpc} RPC"))
}

#[tonic::async_trait]
impl provider_server::Provider for ProviderService {
    async fn get_metadata(
        &self,
        request: Request<pb::get_metadata::Request>,
    ) -> RpcResult<pb::get_metadata::Response> {
        provider_rpcs::get_metadata(&self.provider, request).await
    }

    async fn get_provider_schema(
        &self,
        request: Request<pb::get_provider_schema::Request>,
    ) -> RpcResult<pb::get_provider_schema::Response> {
        provider_rpcs::get_provider_schema(&self.provider, request).await
    }

    async fn validate_provider_config(
        &self,
        request: Request<pb::validate_provider_config::Request>,
    ) -> RpcResult<pb::validate_provider_config::Response> {
        provider_rpcs::validate_provider_config(&self.provider, request).await
    }

    async fn configure_provider(
        &self,
        request: Request<pb::configure_provider::Request>,
    ) -> RpcResult<pb::configure_provider::Response> {
        provider_rpcs::configure_provider(&self.provider, request).await
    }

    async fn validate_resource_config(
        &self,
        request: Request<pb::validate_resource_config::Request>,
    ) -> RpcResult<pb::validate_resource_config::Response> {
        resource_rpcs::validate_resource_config(&self.provider, request).await
    }

    async fn validate_data_resource_config(
        &self,
        request: Request<pb::validate_data_resource_config::Request>,
    ) -> RpcResult<pb::validate_data_resource_config::Response> {
        provider_rpcs::validate_data_resource_config(&self.provider, request).await
    }

    async fn read_data_source(
        &self,
        request: Request<pb::read_data_source::Request>,
    ) -> RpcResult<pb::read_data_source::Response> {
        provider_rpcs::read_data_source(&self.provider, request).await
    }

    async fn upgrade_resource_state(
        &self,
        request: Request<pb::upgrade_resource_state::Request>,
    ) -> RpcResult<pb::upgrade_resource_state::Response> {
        resource_rpcs::upgrade_resource_state(&self.provider, request).await
    }

    async fn read_resource(
        &self,
        request: Request<pb::read_resource::Request>,
    ) -> RpcResult<pb::read_resource::Response> {
        resource_rpcs::read_resource(&self.provider, request).await
    }

    async fn plan_resource_change(
        &self,
        request: Request<pb::plan_resource_change::Request>,
    ) -> RpcResult<pb::plan_resource_change::Response> {
        resource_rpcs::plan_resource_change(&self.provider, request).await
    }

    async fn apply_resource_change(
        &self,
        request: Request<pb::apply_resource_change::Request>,
    ) -> RpcResult<pb::apply_resource_change::Response> {
        resource_rpcs::apply_resource_change(&self.provider, request).await
    }

    async fn import_resource_state(
        &self,
        request: Request<pb::import_resource_state::Request>,
    ) -> RpcResult<pb::import_resource_state::Response> {
        resource_rpcs::import_resource_state(&self.provider, request).await
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
        request: Request<pb::validate_ephemeral_resource_config::Request>,
    ) -> RpcResult<pb::validate_ephemeral_resource_config::Response> {
        ephemeral_rpcs::validate_ephemeral_resource_config(&self.provider, request).await
    }

    async fn open_ephemeral_resource(
        &self,
        request: Request<pb::open_ephemeral_resource::Request>,
    ) -> RpcResult<pb::open_ephemeral_resource::Response> {
        ephemeral_rpcs::open_ephemeral_resource(&self.provider, request).await
    }

    async fn renew_ephemeral_resource(
        &self,
        request: Request<pb::renew_ephemeral_resource::Request>,
    ) -> RpcResult<pb::renew_ephemeral_resource::Response> {
        ephemeral_rpcs::renew_ephemeral_resource(&self.provider, request).await
    }

    async fn close_ephemeral_resource(
        &self,
        request: Request<pb::close_ephemeral_resource::Request>,
    ) -> RpcResult<pb::close_ephemeral_resource::Response> {
        ephemeral_rpcs::close_ephemeral_resource(&self.provider, request).await
    }

    async fn validate_action_config(
        &self,
        request: Request<pb::validate_action_config::Request>,
    ) -> RpcResult<pb::validate_action_config::Response> {
        action_rpcs::validate_action_config(&self.provider, request).await
    }

    async fn plan_action(
        &self,
        request: Request<pb::plan_action::Request>,
    ) -> RpcResult<pb::plan_action::Response> {
        action_rpcs::plan_action(&self.provider, request).await
    }

    type InvokeActionStream = action_rpcs::EventStream;

    async fn invoke_action(
        &self,
        request: Request<pb::invoke_action::Request>,
    ) -> RpcResult<Self::InvokeActionStream> {
        action_rpcs::invoke_action(&self.provider, request).await
    }

    async fn get_functions(&self, _: Request<pb::Unsupported>) -> RpcResult<pb::Unsupported> {
        Err(unsupported("GetFunctions"))
    }

    async fn call_function(&self, _: Request<pb::Unsupported>) -> RpcResult<pb::Unsupported> {
        Err(unsupported("CallFunction"))
    }
}
