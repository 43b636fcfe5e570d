//! The family's CUDA kernels (`src/ops/along_axis/along_axis.cu`): a block per lane, the lane's reductions in shared memory, and
//! the lane itself kept in dynamic shared memory when it fits (one read of the input instead of two or three).

use super::{AlongAxis, AlongAxisKernels};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::KernelSig;
use crate::device::cuda::{
    dest, lane_walk, launch_grid_shared, threads_for, Arg, CudaStorage, MAX_BLOCKS, SHARED_BYTES,
};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

// SAFETY: the kernel writes every element of its output (one block per lane, each lane's every element), and
// device memory is never read as host values without a copy.
unsafe impl AlongAxisKernels for Cuda {
    fn along_axis<T: FloatDType>(
        op: AlongAxis,
        (storage, layout): (&CudaStorage<T>, &Layout),
        axis: usize,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let name = op.name();
        let dims = *layout.dims();
        let out_ptr = dest(name, out, layout.numel())?;
        let len = dims[axis];
        if len == 0 {
            return Ok(());
        }
        let eps = match op {
            AlongAxis::LayerNorm { eps } | AlongAxis::RmsNorm { eps } => eps,
            AlongAxis::Softmax | AlongAxis::LogSoftmax => 0.0,
        };
        let (rows, mut args) = lane_walk(&[layout], axis);
        args.extend([
            Arg::U64(storage.ptr_at(layout.offset())),
            Arg::U64(out_ptr),
            Arg::scalar(eps),
        ]);
        let grid = rows.min(MAX_BLOCKS) as u32;
        let sig = KernelSig::along_axis(name, T::DTYPE);
        // The kernel keeps the lane in shared memory when given room for it (it reads the size it got).
        let lane_bytes = len * size_of::<T>();
        let shared = if lane_bytes <= SHARED_BYTES {
            lane_bytes
        } else {
            0
        };
        launch_grid_shared(name, sig, (grid, 1, 1), threads_for(len), shared, args)
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `{op}_{T}(<lane walk>, x, out, eps)`.
    pub fn along_axis(op: &str, t: DType) -> Self {
        Self::lane_kernel("along_axis", op, t, &[PTR, PTR, F64])
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    if t.is_float() {
        for op in AlongAxis::ALL {
            all.push(KernelSig::along_axis(op.name(), t));
        }
    }
}
