//! Compiles hct's subset of the Talos machine API and of the COSI state API
//! (`../proto`) into server stubs for the emulated apid, with the pure-Rust
//! protobuf parser protox so that no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let contracts = ["../proto/talos_machine.proto", "../proto/cosi_state.proto"];
    for contract in contracts {
        println!("cargo:rerun-if-changed={contract}");
    }
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .compile_fds(protox::compile(contracts, ["../proto"])?)?;
    Ok(())
}
