//! Server stubs generated at build time from `proto/talos_machine.proto`
//! (the machine API) and `proto/cosi_state.proto` (the COSI state API, in
//! `cosi`).

#![allow(clippy::all, clippy::pedantic)]

tonic::include_proto!("machine");

pub mod cosi {
    tonic::include_proto!("cosi.resource");
}
