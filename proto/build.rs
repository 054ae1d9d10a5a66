//! Compiles armada/v1/*.proto (messages and gRPC services) with the protoc binary that
//! ships inside the `protoc-bin-vendored` crate, so a fresh machine needs no system protoc.
//! Also writes the file descriptor set that the coordinator's reflection service serves.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; the proto compiler reads PROTOC.
    unsafe { std::env::set_var("PROTOC", protoc) };
    let protos = ["armada/v1/job.proto", "armada/v1/service.proto"];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("armada_v1_descriptor.bin"))
        .compile_protos(&protos, &["."])?;
    Ok(())
}
