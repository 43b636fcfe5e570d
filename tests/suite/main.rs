//! The integration tests, built as one binary: a module per area (nalgebra's `tests/lib.rs` pattern). One link
//! of the library and its dependencies instead of one per file, which was most of a fresh `cargo test`'s time.
//!
//! Kept apart: `tests/ui.rs` (trybuild's compile-fail gallery), `tests/embedded.rs` (also built without any crate
//! feature), `tests/cuda_ptx.rs` (built with `--features cuda` alone) and `tests/cuda_device.rs` (reads the GPU
//! allocator's global statistics, so nothing else may allocate beside it).
//!
//! Run one area with a filter: `cargo test --test suite autograd::`.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod along_axis;
mod autograd;
mod conv;
mod in_place;
mod indexing;
mod io;
mod join;
mod masks;
mod matmul;
mod nn;
mod norm_layers;
mod ops;
mod optim;
mod pool;
mod reduce;
mod robustness;
mod scan;
mod sort;
mod tensor;
mod train_digits;
