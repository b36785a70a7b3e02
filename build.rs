//! Compiles the wire contracts in `proto/` with a pure-Rust protobuf parser
//! (protox), so building hct needs no system `protoc`.
//!
//! hct serves the Terraform plugin protocol (and go-plugin's services) and is
//! a client of the Talos machine API and of the COSI state API beside it.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let served = [
        "proto/tfplugin6.proto",
        "proto/go_plugin.proto",
        "proto/grpc_health.proto",
    ];
    let called = ["proto/talos_machine.proto", "proto/cosi_state.proto"];
    for file in served.iter().chain(&called) {
        println!("cargo:rerun-if-changed={file}");
    }
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .compile_fds(protox::compile(served, ["proto"])?)?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(false)
        .compile_fds(protox::compile(called, ["proto"])?)?;
    Ok(())
}
