//! The wire: Terraform's plugin protocol v6 over gRPC, and the go-plugin
//! process contract around it (handshake, AutoMTLS, controller services).
//! Everything here translates; decisions live in `crate::provider`.

pub mod convert;
pub mod go_plugin;
pub mod serve;
pub mod service;
pub mod tls;

/// Code generated at build time from `proto/` (our wire contracts).
pub mod pb {
    pub mod tfplugin6 {
        tonic::include_proto!("tfplugin6");
    }
    pub mod plugin {
        tonic::include_proto!("plugin");
    }
    pub mod health {
        tonic::include_proto!("grpc.health.v1");
    }
}
