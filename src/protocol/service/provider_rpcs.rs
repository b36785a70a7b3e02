//! The provider's own RPCs and the data sources': metadata, schemas,
//! validating and configuring the provider block, validating and reading
//! data sources.

use tonic::{Request, Response};
use tracing::{debug, info};

use super::answer::{RpcResult, or_answer, until_stopped};
use crate::protocol::convert::{self, decode, encode};
use crate::protocol::pb::tfplugin6 as pb;
use crate::provider::Provider;
use crate::provider::config::{self, ProcessEnvironment};
use crate::tf::Diagnostics;

pub(super) async fn get_metadata(
    provider: &Provider,
    _: Request<pb::get_metadata::Request>,
) -> RpcResult<pb::get_metadata::Response> {
    Ok(Response::new(pb::get_metadata::Response {
        server_capabilities: Some(capabilities()),
        diagnostics: vec![],
        data_sources: provider
            .data_sources()
            .map(|d| pb::get_metadata::DataSourceMetadata {
                type_name: d.type_name().into(),
            })
            .collect(),
        resources: provider
            .resources()
            .map(|r| pb::get_metadata::ResourceMetadata {
                type_name: r.type_name().into(),
            })
            .collect(),
        ephemeral_resources: provider
            .ephemeral_resources()
            .map(|r| pb::get_metadata::EphemeralResourceMetadata {
                type_name: r.type_name().into(),
            })
            .collect(),
        actions: provider
            .actions()
            .map(|a| pb::get_metadata::ActionMetadata {
                type_name: a.type_name().into(),
            })
            .collect(),
    }))
}

pub(super) async fn get_provider_schema(
    provider: &Provider,
    _: Request<pb::get_provider_schema::Request>,
) -> RpcResult<pb::get_provider_schema::Response> {
    Ok(Response::new(pb::get_provider_schema::Response {
        provider: Some(convert::schema(&provider.schema())),
        resource_schemas: provider
            .resources()
            .map(|r| (r.type_name().to_string(), convert::schema(&r.schema())))
            .collect(),
        data_source_schemas: provider
            .data_sources()
            .map(|d| (d.type_name().to_string(), convert::schema(&d.schema())))
            .collect(),
        diagnostics: vec![],
        provider_meta: None,
        server_capabilities: Some(capabilities()),
        ephemeral_resource_schemas: provider
            .ephemeral_resources()
            .map(|r| (r.type_name().to_string(), convert::schema(&r.schema())))
            .collect(),
        action_schemas: provider
            .actions()
            .map(|a| {
                let schema = Some(convert::schema(&a.schema()));
                (a.type_name().to_string(), pb::ActionSchema { schema })
            })
            .collect(),
    }))
}

pub(super) async fn validate_provider_config(
    provider: &Provider,
    request: Request<pb::validate_provider_config::Request>,
) -> RpcResult<pb::validate_provider_config::Response> {
    let answer = |d: Diagnostics| pb::validate_provider_config::Response {
        diagnostics: convert::diagnostics(d),
    };
    let ty = provider.schema().value_type();
    let config = or_answer!(decode(request.get_ref().config.as_ref(), &ty), answer);
    Ok(Response::new(answer(config::validate(&config))))
}

pub(super) async fn configure_provider(
    provider: &Provider,
    request: Request<pb::configure_provider::Request>,
) -> RpcResult<pb::configure_provider::Response> {
    let answer = |d: Diagnostics| pb::configure_provider::Response {
        diagnostics: convert::diagnostics(d),
    };
    let request = request.into_inner();
    info!(terraform_version = %request.terraform_version, "configuring hct {}", crate::provider::VERSION);
    let ty = provider.schema().value_type();
    let config = or_answer!(decode(request.config.as_ref(), &ty), answer);
    match config::resolve(&config, &ProcessEnvironment) {
        Ok(resolved) => {
            if let Some(resolved) = &resolved {
                debug!(endpoint = %resolved.hcloud_endpoint, proxy = resolved.talos_proxy.is_some(), "provider configured");
            }
            let diagnostics = match provider.configure(resolved) {
                Ok(()) => Diagnostics::new(),
                Err(diagnostic) => diagnostic.into(),
            };
            Ok(Response::new(answer(diagnostics)))
        }
        Err(diagnostics) => Ok(Response::new(answer(diagnostics))),
    }
}

pub(super) async fn validate_data_resource_config(
    provider: &Provider,
    request: Request<pb::validate_data_resource_config::Request>,
) -> RpcResult<pb::validate_data_resource_config::Response> {
    let answer = |d: Diagnostics| pb::validate_data_resource_config::Response {
        diagnostics: convert::diagnostics(d),
    };
    let request = request.into_inner();
    let data_source = or_answer!(provider.data_source(&request.type_name), answer);
    let config = or_answer!(
        decode(request.config.as_ref(), &data_source.schema().value_type()),
        answer
    );
    Ok(Response::new(answer(data_source.validate(&config))))
}

pub(super) async fn read_data_source(
    provider: &Provider,
    request: Request<pb::read_data_source::Request>,
) -> RpcResult<pb::read_data_source::Response> {
    let answer = |d: Diagnostics| pb::read_data_source::Response {
        state: None,
        diagnostics: convert::diagnostics(d),
    };
    let request = request.into_inner();
    let data_source = or_answer!(provider.data_source(&request.type_name), answer);
    let ty = data_source.schema().value_type();
    let config = or_answer!(decode(request.config.as_ref(), &ty), answer);
    let ctx = provider.context();
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

fn capabilities() -> pb::ServerCapabilities {
    pb::ServerCapabilities {
        plan_destroy: false,
        // No RPC depends on GetProviderSchema having been called, so the
        // CLI may reuse the schema it got from this binary's first start in
        // the run: each later start of the plan skips building, sending
        // and decoding it.
        get_provider_schema_optional: true,
        move_resource_state: false,
    }
}
