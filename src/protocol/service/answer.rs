//! What the RPCs share: their result type, answering with diagnostics when
//! a step fails (`or_answer!`), and stopping when Terraform asks (Ctrl-C).

use std::future::Future;

use tonic::{Response, Status};

use crate::provider::Context;
use crate::tf::Diagnostic;

pub type RpcResult<T> = Result<Response<T>, Status>;

/// Runs `work` until it finishes or Terraform asks the provider to stop.
pub async fn until_stopped<T>(
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

/// Unwraps a step's result, or returns its diagnostics as the RPC's answer.
macro_rules! or_answer {
    ($result:expr, $answer:expr) => {
        match $result {
            Ok(value) => value,
            Err(diagnostic) => {
                return Ok(::tonic::Response::new($answer(
                    $crate::tf::Diagnostics::from(diagnostic),
                )));
            }
        }
    };
}

pub(super) use or_answer;
