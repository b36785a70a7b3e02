//! Compiles the wire contracts in `proto/` with a pure-Rust protobuf parser
//! (protox), so building hct needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/tfplugin6.proto",
        "proto/go_plugin.proto",
        "proto/grpc_health.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
