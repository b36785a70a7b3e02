//! Server stubs generated at build time from `proto/talos_machine.proto`.

#![allow(clippy::all, clippy::pedantic)]

tonic::include_proto!("machine");
