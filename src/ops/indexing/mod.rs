//! Indexing by index tensors: `gather`, `scatter_add`, `index_select`, `embedding` and the `Tensor` /
//! `Traced` methods built on them (`tensor.rs`, `traced.rs`), and the device side: [`IndexingKernels`], the host
//! walks `Cpu` and `Embedded` share (`host.rs`) and the CUDA launchers (`cuda.rs`, `src/ops/indexing/indexing.cu`). Every index
//! is checked; a bad one is `Error::IndexOutOfRange` naming the op, the axis, the index and the size.

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::Kernels;
use crate::dtype::{FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;

/// The family's kernels, which every device implements; [`crate::ops::Device`] requires them beside
/// [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: each kernel initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait IndexingKernels: Kernels {
    /// `out[p] = src[p with its `axis` coordinate replaced by idx[p]]` over the index view's dims; `src` has the
    /// same dims except along `axis`. An index outside `src`'s axis is `Error::IndexOutOfRange` naming `op`.
    fn gather<T: WithDType, I: IndexDType>(
        op: &'static str,
        src: (&Self::Buffer<T>, &Layout),
        idx: (&Self::Buffer<I>, &Layout),
        axis: usize,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// A dense copy of `dst` with `src[p]` added at `p with its axis coordinate replaced by idx[p]` for every
    /// position `p` of the index view (duplicates accumulate).
    fn scatter_add<T: WithDType, I: IndexDType>(
        op: &'static str,
        dst: (&Self::Buffer<T>, &Layout),
        idx: (&Self::Buffer<I>, &Layout),
        src: (&Self::Buffer<T>, &Layout),
        axis: usize,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// Cross entropy's gradient with respect to the logits, from the forward pass's log-probabilities (the
    /// classes their last axis): `out = exp(log_probs) g[row]`, less `g[row]` at the row's label, in
    /// `log_probs`' dims, dense. `labels` and `g` hold one value per row (views over the rows' dims). A label
    /// outside the classes takes nothing off: the forward pass's gather reported it.
    fn cross_entropy_backward<T: FloatDType, I: IndexDType>(
        log_probs: (&Self::Buffer<T>, &Layout),
        labels: (&Self::Buffer<I>, &Layout),
        g: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}
