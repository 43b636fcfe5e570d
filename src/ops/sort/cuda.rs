//! The family's CUDA kernel (`ptx/sort.cu`): a thread per lane, a merge sort of the lane's positions through a
//! scratch buffer of the output's size.

use super::SortKernels;
use crate::device::cuda::kernels::KernelSig;
use crate::device::cuda::{dest, lane_walk, launch, Arg, CudaStorage};
use crate::device::Cuda;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;

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
