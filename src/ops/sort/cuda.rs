//! The family's CUDA kernel (`src/ops/sort/sort.cu`): a thread per lane, a merge sort of the lane's positions through a
//! scratch buffer of the output's size.

use super::SortKernels;
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::KernelSig;
use crate::device::cuda::{dest, lane_walk, launch, Arg, CudaStorage};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

// SAFETY: the kernel writes every position of every lane of its output, and device memory is never read as host
// values without a copy.
unsafe impl SortKernels for Cuda {
    fn argsort<T: WithDType>(
        (storage, layout): (&CudaStorage<T>, &Layout),
        axis: usize,
        descending: bool,
        out: &mut CudaStorage<u32>,
    ) -> Result<()> {
        let n = layout.numel();
        let out_ptr = dest("argsort", out, n)?;
        let scratch = CudaStorage::<u32>::alloc("argsort", n)?;
        let (lanes, mut args) = lane_walk(&[layout], axis);
        args.extend([
            Arg::U64(storage.ptr_at(layout.offset())),
            Arg::U64(out_ptr),
            Arg::U64(scratch.ptr_at(0)),
            Arg::U64(descending as u64),
        ]);
        // The scratch buffer goes back to the cache when this returns; the stream runs the kernel before any
        // later user of that memory.
        launch("argsort", KernelSig::argsort(T::DTYPE), lanes, args)
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `argsort_{T}(<lane walk>, x, out, scratch, descending)`.
    pub fn argsort(t: DType) -> Self {
        Self::lane_kernel("sort", "argsort", t, &[PTR, PTR, PTR, COUNT])
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    all.push(KernelSig::argsort(t));
}
