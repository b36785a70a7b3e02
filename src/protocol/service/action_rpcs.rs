//! Actions' RPCs: validate, plan, invoke. Invoking streams the action's
//! progress lines as they come, then one completion with its diagnostics;
//! Ctrl-C (StopProvider) ends it like any other call.

use std::pin::Pin;

use tokio_stream::Stream;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status};

use super::answer::{RpcResult, until_stopped};
use crate::protocol::convert::{self, decode};
use crate::protocol::pb::tfplugin6 as pb;
use crate::provider::{Progress, Provider};
use crate::tf::{Diagnostic, Diagnostics};

pub type EventStream = Pin<Box<dyn Stream<Item = Result<pb::invoke_action::Event, Status>> + Send>>;

pub(super) async fn validate_action_config(
    provider: &Provider,
    request: Request<pb::validate_action_config::Request>,
) -> RpcResult<pb::validate_action_config::Response> {
    let request = request.into_inner();
    let diagnostics = checked(provider, &request.type_name, request.config.as_ref());
    Ok(Response::new(pb::validate_action_config::Response {
        diagnostics: convert::diagnostics(diagnostics),
    }))
}

/// Plan checks the configuration again; hct defers nothing.
pub(super) async fn plan_action(
    provider: &Provider,
    request: Request<pb::plan_action::Request>,
) -> RpcResult<pb::plan_action::Response> {
    let request = request.into_inner();
    let diagnostics = checked(provider, &request.action_type, request.config.as_ref());
    Ok(Response::new(pb::plan_action::Response {
        diagnostics: convert::diagnostics(diagnostics),
        deferred: None,
    }))
}

/// The action's checks of a configuration (which may hold unknowns).
fn checked(provider: &Provider, type_name: &str, config: Option<&pb::DynamicValue>) -> Diagnostics {
    provider
        .action(type_name)
        .and_then(|action| Ok((action, decode(config, &action.schema().value_type())?)))
        .map_or_else(Diagnostics::from, |(action, config)| {
            action.validate(&config)
        })
}

pub(super) async fn invoke_action(
    provider: &Provider,
    request: Request<pb::invoke_action::Request>,
) -> RpcResult<EventStream> {
    let request = request.into_inner();
    let (lines, received) = tokio::sync::mpsc::unbounded_channel::<String>();
    let (done, completed) = tokio::sync::oneshot::channel::<Diagnostics>();
    let prepared = provider.action(&request.action_type).and_then(|action| {
        let config = decode(request.config.as_ref(), &action.schema().value_type())?;
        if config.is_wholly_known() {
            Ok((action.clone(), config))
        } else {
            Err(Diagnostic::error(
                format!("{} cannot run yet", request.action_type),
                "Its configuration holds values that are known only after apply. Apply \
                 first, then invoke it.",
            ))
        }
    });
    // The task ends with the stream: a Terraform that hangs up stops it.
    let running = match prepared {
        Err(d) => {
            let _ = done.send(d.into());
            None
        }
        Ok((action, config)) => {
            let ctx = provider.context();
            let progress = Progress::new(lines.clone());
            Some(AbortOnDrop(tokio::spawn(async move {
                let work = action.invoke(&ctx, &config, &progress);
                let diagnostics = until_stopped(&ctx, work, Diagnostics::from).await;
                let _ = done.send(diagnostics);
            })))
        }
    };
    // The lines as they come; the completion once the action has ended (its
    // sender dropped with it, so the lines end first).
    drop(lines);
    let progress = tokio_stream::StreamExt::map(UnboundedReceiverStream::new(received), |line| {
        Ok(pb::invoke_action::Event {
            r#type: Some(pb::invoke_action::event::Type::Progress(
                pb::invoke_action::event::Progress { message: line },
            )),
        })
    });
    let completion = futures_util::stream::once(async move {
        let _running = running;
        let diagnostics = completed.await.unwrap_or_else(|_| {
            Diagnostic::error("The action ended early", "hct's task running it stopped.").into()
        });
        Ok(pb::invoke_action::Event {
            r#type: Some(pb::invoke_action::event::Type::Completed(
                pb::invoke_action::event::Completed {
                    diagnostics: convert::diagnostics(diagnostics),
                },
            )),
        })
    });
    Ok(Response::new(Box::pin(tokio_stream::StreamExt::chain(
        progress, completion,
    ))))
}

/// Aborts the task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
