//! armada's wire contract: the generated types and gRPC services of
//! `proto/armada/v1/*.proto`, and what both sides of it share: conversions to and from
//! `armada_core`'s types (`wire`), the bearer token (`auth`), dialing (`connect`), the
//! heartbeat client (`heartbeats`) and how many jobs a worker holds leased (`lease`).
//! The coordinator and the worker runtime each depend on this crate, never on each other.
//!
//! Architecture invariant: prost types never leave the coordinator's and the worker
//! runtime's service modules; the rest of armada speaks `armada_core` types.

/// Version 1 of the contract.
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/armada.v1.rs"));

    /// The encoded file descriptor set of every v1 file (for gRPC reflection).
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/armada_v1_descriptor.bin"));
}

pub mod auth;
pub mod connect;
pub mod heartbeats;
pub mod ids;
pub mod lease;
pub mod wire;
