//! Ephemeral resources' RPCs: validate, open, renew, close. Both CLIs open
//! an ephemeral resource only once its configuration is wholly known (at
//! plan time they skip it and treat its result as unknown); a client that
//! sends unknown values anyway is answered with a deferral when it allows
//! one, else with an error.

use std::time::{SystemTime, UNIX_EPOCH};

use tonic::{Request, Response};

use super::answer::{RpcResult, or_answer, until_stopped};
use crate::protocol::convert::{self, decode, encode};
use crate::protocol::pb::tfplugin6 as pb;
use crate::provider::{Opened, Provider};
use crate::tf::{Diagnostic, Diagnostics, Value};

pub(super) async fn validate_ephemeral_resource_config(
    provider: &Provider,
    request: Request<pb::validate_ephemeral_resource_config::Request>,
) -> RpcResult<pb::validate_ephemeral_resource_config::Response> {
    let answer = |d: Diagnostics| pb::validate_ephemeral_resource_config::Response {
        diagnostics: convert::diagnostics(d),
    };
    let request = request.into_inner();
    let resource = or_answer!(provider.ephemeral_resource(&request.type_name), answer);
    let ty = resource.schema().value_type();
    let config = or_answer!(decode(request.config.as_ref(), &ty), answer);
    Ok(Response::new(answer(resource.validate(&config))))
}

pub(super) async fn open_ephemeral_resource(
    provider: &Provider,
    request: Request<pb::open_ephemeral_resource::Request>,
) -> RpcResult<pb::open_ephemeral_resource::Response> {
    let answer = |d: Diagnostics| pb::open_ephemeral_resource::Response {
        diagnostics: convert::diagnostics(d),
        ..Default::default()
    };
    let request = request.into_inner();
    let resource = or_answer!(provider.ephemeral_resource(&request.type_name), answer);
    let ty = resource.schema().value_type();
    let config = or_answer!(decode(request.config.as_ref(), &ty), answer);
    if !config.is_wholly_known() {
        let deferral_allowed = request
            .client_capabilities
            .is_some_and(|c| c.deferral_allowed);
        if !deferral_allowed {
            return Ok(Response::new(answer(
                Diagnostic::error(
                    format!("{} cannot be opened yet", request.type_name),
                    "Its configuration holds values that are known only after apply, and this \
                     Terraform does not allow deferring. Terraform and OpenTofu open ephemeral \
                     resources once their inputs are known; run apply.",
                )
                .into(),
            )));
        }
        let result = or_answer!(encode(Value::Unknown, &ty), answer);
        return Ok(Response::new(pb::open_ephemeral_resource::Response {
            result: Some(result),
            deferred: Some(pb::Deferred {
                reason: pb::deferred::Reason::ResourceConfigUnknown as i32,
            }),
            ..Default::default()
        }));
    }
    let ctx = provider.context();
    let opened = until_stopped(&ctx, resource.open(&ctx, &config), |d| Opened {
        diagnostics: d.into(),
        ..Default::default()
    })
    .await;
    let mut diagnostics = opened.diagnostics;
    let result = if diagnostics.has_errors() {
        None
    } else {
        match encode(opened.result, &ty) {
            Ok(encoded) => Some(encoded),
            Err(d) => {
                diagnostics.push(d);
                None
            }
        }
    };
    Ok(Response::new(pb::open_ephemeral_resource::Response {
        diagnostics: convert::diagnostics(diagnostics),
        renew_at: opened.renew_at.map(timestamp),
        result,
        private: (!opened.private.is_empty()).then_some(opened.private),
        deferred: None,
    }))
}

pub(super) async fn renew_ephemeral_resource(
    provider: &Provider,
    request: Request<pb::renew_ephemeral_resource::Request>,
) -> RpcResult<pb::renew_ephemeral_resource::Response> {
    let answer = |d: Diagnostics| pb::renew_ephemeral_resource::Response {
        diagnostics: convert::diagnostics(d),
        ..Default::default()
    };
    let request = request.into_inner();
    let resource = or_answer!(provider.ephemeral_resource(&request.type_name), answer);
    let ctx = provider.context();
    let private = request.private.unwrap_or_default();
    let renewed = until_stopped(&ctx, resource.renew(&ctx, &private), |d| Opened {
        diagnostics: d.into(),
        ..Default::default()
    })
    .await;
    Ok(Response::new(pb::renew_ephemeral_resource::Response {
        diagnostics: convert::diagnostics(renewed.diagnostics),
        renew_at: renewed.renew_at.map(timestamp),
        private: (!renewed.private.is_empty()).then_some(renewed.private),
    }))
}

pub(super) async fn close_ephemeral_resource(
    provider: &Provider,
    request: Request<pb::close_ephemeral_resource::Request>,
) -> RpcResult<pb::close_ephemeral_resource::Response> {
    let answer = |d: Diagnostics| pb::close_ephemeral_resource::Response {
        diagnostics: convert::diagnostics(d),
    };
    let request = request.into_inner();
    let resource = or_answer!(provider.ephemeral_resource(&request.type_name), answer);
    let ctx = provider.context();
    let private = request.private.unwrap_or_default();
    let diagnostics = until_stopped(&ctx, resource.close(&ctx, &private), Diagnostics::from).await;
    Ok(Response::new(answer(diagnostics)))
}

fn timestamp(at: SystemTime) -> pb::Timestamp {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    pb::Timestamp {
        seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(since.subsec_nanos()).unwrap_or_default(),
    }
}
