//! armada's wire contract: the generated types and gRPC services of
//! `proto/armada/v1/*.proto`.
//!
//! Architecture invariant: prost types never leave the coordinator's and the worker
//! runtime's service modules; the rest of armada speaks `armada_core` types.

/// Version 1 of the contract.
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/armada.v1.rs"));

    /// The encoded file descriptor set of every v1 file (for gRPC reflection).
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/armada_v1_descriptor.bin"));
}
