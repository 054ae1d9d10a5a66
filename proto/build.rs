//! Compiles armada/v1/*.proto with the protoc binary that ships inside the
//! `protoc-bin-vendored` crate, so a fresh machine needs no system protoc.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; prost-build reads PROTOC.
    unsafe { std::env::set_var("PROTOC", protoc) };
    let protos = ["armada/v1/job.proto"];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    prost_build::compile_protos(&protos, &["."])?;
    Ok(())
}
