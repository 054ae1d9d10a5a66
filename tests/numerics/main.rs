//! The numerics' checks, one binary beside `tests/integration/`: every family's golden
//! trajectories bit for bit (natively, under qemu's models of each x86-64 level, and on
//! aarch64), one sweep shared by a native worker and an emulated one, and every option of
//! every choice parameter reaching its family's code. Apart from the integration tests because
//! their qemu runs load every core for minutes. `cargo test --test numerics golden::` runs
//! one module's.

#[path = "../integration/common/mod.rs"]
mod common;

mod choices;
mod golden;
mod processors;
