//! The services go-plugin expects beside the provider: the controller that
//! shuts the plugin down, the (unused) connection broker and stdio streams,
//! and the health check Terraform pings.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_stream::Stream;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::{Request, Response, Status, Streaming};
use tracing::info;

use super::pb::health::{self, health_server};
use super::pb::plugin::{self, grpc_broker_server, grpc_controller_server, grpc_stdio_server};

/// Ends the server when Terraform is done with the plugin.
pub struct Controller {
    pub shutdown: CancellationToken,
}

#[tonic::async_trait]
impl grpc_controller_server::GrpcController for Controller {
    async fn shutdown(&self, _: Request<plugin::Empty>) -> Result<Response<plugin::Empty>, Status> {
        info!("Terraform is done with the provider: shutting down");
        self.shutdown.cancel();
        Ok(Response::new(plugin::Empty {}))
    }
}

/// A stream that yields nothing and ends when the plugin shuts down.
fn idle_stream<T: Send + 'static>(
    shutdown: CancellationToken,
) -> Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>> {
    Box::pin(UntilShutdown {
        shutdown: Box::pin(shutdown.cancelled_owned()),
        item: PhantomData,
    })
}

struct UntilShutdown<T> {
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    item: PhantomData<fn() -> T>,
}

impl<T> Stream for UntilShutdown<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.shutdown.as_mut().poll(cx).map(|()| None)
    }
}

/// hct brokers no side connections; the stream only lives as long as the plugin.
pub struct Broker {
    pub shutdown: CancellationToken,
}

#[tonic::async_trait]
impl grpc_broker_server::GrpcBroker for Broker {
    type StartStreamStream = Pin<Box<dyn Stream<Item = Result<plugin::ConnInfo, Status>> + Send>>;

    async fn start_stream(
        &self,
        _: Request<Streaming<plugin::ConnInfo>>,
    ) -> Result<Response<Self::StartStreamStream>, Status> {
        Ok(Response::new(idle_stream(self.shutdown.clone())))
    }
}

/// hct writes its logs to stderr itself, so the stdio stream carries nothing.
pub struct Stdio {
    pub shutdown: CancellationToken,
}

#[tonic::async_trait]
impl grpc_stdio_server::GrpcStdio for Stdio {
    type StreamStdioStream = Pin<Box<dyn Stream<Item = Result<plugin::StdioData, Status>> + Send>>;

    async fn stream_stdio(
        &self,
        _: Request<plugin::Empty>,
    ) -> Result<Response<Self::StreamStdioStream>, Status> {
        Ok(Response::new(idle_stream(self.shutdown.clone())))
    }
}

pub struct Health;

#[tonic::async_trait]
impl health_server::Health for Health {
    async fn check(
        &self,
        _: Request<health::HealthCheckRequest>,
    ) -> Result<Response<health::HealthCheckResponse>, Status> {
        Ok(Response::new(health::HealthCheckResponse {
            status: health::health_check_response::ServingStatus::Serving as i32,
        }))
    }
}
