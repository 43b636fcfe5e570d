//! Sorting along one axis: `argsort`, `sort` and `topk` (PyTorch's), built on one kernel, the stable order of
//! every lane. The whole family lives here: the order (this file), the `Tensor` methods (`tensor.rs`), the
//! `Traced` methods (`traced.rs`: values gathered by the order, so their gradient is the gather's), the device
//! trait [`SortKernels`] and its implementations (`host.rs` for `Cpu` and `Embedded`, `cuda.rs` launching
//! `src/ops/sort/sort.cu`).
//!
//! The order is PyTorch's with `stable=True`: ascending puts NaN last, descending puts NaN first, and equal
//! elements (`-0.0` and `0.0` included) keep their input order either way.

#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

pub use tensor::TopkOutput;
#[cfg(feature = "std")]
pub use traced::TracedTopkOutput;

use crate::device::Kernels;
use crate::dtype::{Accumulator, WithDType};
use crate::error::Result;
use crate::layout::Layout;

/// `topk`'s options, PyTorch's keyword arguments: the largest elements (or the smallest) and sorted by value (or in
/// their order along the axis). The default is PyTorch's: largest, sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopK {
    /// The largest elements (PyTorch's default), or the smallest.
    pub largest: bool,
    /// Ordered by value, the largest (smallest) first (PyTorch's default); otherwise in the order they stand along
    /// the axis.
    pub sorted: bool,
}

impl Default for TopK {
    fn default() -> Self {
        TopK {
            largest: true,
            sorted: true,
        }
    }
}

/// The family's kernel, which every device implements (`Cpu` and `Embedded` in `host.rs`, `Cuda` in `cuda.rs`);
/// [`crate::ops::Device`] requires it beside [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: `argsort` initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait SortKernels: Kernels {
    /// For every lane along `axis`, the positions of its elements in sorted order (PyTorch's stable order, see
    /// the module), written into a dense output with the input view's dims.
    fn argsort<T: WithDType>(
        src: (&Self::Buffer<T>, &Layout),
        axis: usize,
        descending: bool,
        out: &mut Self::Out<u32>,
    ) -> Result<()>;
}

/// True when `a` sorts strictly before `b`: ascending with NaN as the largest value, or the reverse when
/// `descending`; neither before the other means a tie, which a stable sort leaves in input order.
#[inline(always)]
pub(crate) fn before<A: Accumulator>(a: A, b: A, descending: bool) -> bool {
    let less = |a: A, b: A| !a.is_nan() && (b.is_nan() || a < b);
    if descending {
        less(b, a)
    } else {
        less(a, b)
    }
}
