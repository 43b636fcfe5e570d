//! Loops over host memory that need no heap, shared by the two devices whose buffers live there: [`Cpu`] (heap
//! buffers, threads, the `gemm` crate for large products) and [`Embedded`] (one dense array per tensor, no heap
//! at all). Each reads operands through runtime [`Layout`]s and writes into slots or slices it is handed, so the
//! same code serves a vector from the CPU's buffer cache and an array on an embedded stack.
//!
//! [`Cpu`]: crate::device::Cpu
//! [`Embedded`]: crate::device::Embedded
//! [`Layout`]: crate::layout::Layout

pub(crate) mod elementwise;
pub(crate) mod kernels;
