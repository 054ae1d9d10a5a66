//! How the world reaches the coordinator: the two gRPC services, the heartbeats' own
//! listener, results streamed to clients, tokens and roles, workers' session credentials,
//! and the dashboard with `/metrics`. Handlers validate and translate; every state change
//! is the scheduler's. The top layer: nothing below imports it.

pub mod access;
pub mod credentials;
pub mod dashboard;
pub mod fetch;
pub mod heartbeats;
pub mod service;
