//! The integration tests of the elementwise ops, reductions, lane ops (softmax, norms), scans and sorting, one
//! binary (`suite_ops`): a module per area, in the pattern of nalgebra's `tests/lib.rs`. Its twin
//! `nn_main.rs` (`suite_nn`) holds the rest. Two binaries rather than one because a fresh `cargo test` spends most
//! of its time compiling them, and rustc compiles one crate mostly on one core: two build side by side on two
//! cores. The areas are split so that both take about as long to compile: 115 s and 107 s each alone (no
//! incremental caches, the 2-core VM, 2026-11-27), where the one binary took 188-200 s.
//!
//! Kept apart: `tests/ui.rs` (trybuild's compile-fail gallery), `tests/embedded.rs` (also built without any crate
//! feature), `tests/cuda_ptx.rs` (built with `--features cuda` alone) and `tests/cuda_device.rs` (reads the GPU
//! allocator's global statistics, so nothing else may allocate beside it).
//!
//! Run one area with a filter: `cargo test --test suite_ops reduce::`.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod along_axis;
mod ops;
mod reduce;
mod scan;
mod sort;
