//! The family's CUDA kernels (`src/ops/reduce/reduce.cu`): a block per output (or per part of one, when few outputs cover
//! many elements: the parts' states are merged by a second kernel).

use super::{ReduceKernels, ReduceOp};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{self, KernelLayout, KernelSig};
use crate::device::cuda::{dest, launch_grid, threads_for, Arg, CudaStorage, MAX_BLOCKS};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::MAX_RANK;
use alloc::vec::Vec;

// SAFETY: every output is written (by its block, or by the merge kernel when split), and device memory is never
// read as host values without a copy.
unsafe impl ReduceKernels for Cuda {
    fn reduce<T: WithDType, Op: ReduceOp<T>>(
        op: Op,
        (storage, layout): (&CudaStorage<T>, &Layout),
        reduced: &[bool; MAX_RANK],
        out: &mut CudaStorage<Op::Out>,
    ) -> Result<()> {
        let name = Op::NAME;
        let (outer, inner) = layout.split_reduced(reduced);
        let (n_out, count) = (outer.numel(), inner.numel());
        let out_ptr = dest(name, out, n_out)?;
        // Few outputs over many elements: split each output's range into parts (blocks) so the whole GPU works,
        // then merge the parts' states in a second kernel.
        let parts = if n_out >= 256 || count < 8192 {
            1
        } else {
            (1024 / n_out).clamp(1, count.div_ceil(4096))
        };
        // Parts start on 16-byte boundaries (a multiple of 16 bytes apart), where the kernel loads 16 bytes at a
        // time.
        let chunk = count
            .div_ceil(parts)
            .max(1)
            .next_multiple_of(16 / size_of::<T>().clamp(1, 16));
        let parts = count.div_ceil(chunk).max(1);
        let partial = if parts > 1 {
            Some(CudaStorage::<u8>::alloc(
                name,
                n_out * parts * kernels::REDUCE_STATE_BYTES,
            )?)
        } else {
            None
        };
        let partial_ptr = partial.as_ref().map_or(0, |p| p.ptr_at(0));
        let args = alloc::vec![
            Arg::U64(n_out as u64),
            Arg::U64(parts as u64),
            Arg::U64(chunk as u64),
            Arg::U64(count as u64),
            Arg::Layout(KernelLayout::new(&outer)),
            Arg::Layout(KernelLayout::new(&inner)),
            Arg::U64(storage.ptr_at(outer.offset())),
            Arg::U64(partial_ptr),
            Arg::U64(out_ptr),
            Arg::scalar(op.param()),
        ];
        let grid = (n_out * parts).min(MAX_BLOCKS) as u32;
        let sig = KernelSig::reduce(name, T::DTYPE);
        launch_grid(name, sig, (grid, 1, 1), threads_for(chunk), args)?;
        if parts > 1 {
            let args = alloc::vec![
                Arg::U64(n_out as u64),
                Arg::U64(parts as u64),
                Arg::U64(count as u64),
                Arg::U64(partial_ptr),
                Arg::U64(out_ptr),
                Arg::scalar(op.param()),
            ];
            let grid = n_out.min(MAX_BLOCKS) as u32;
            let sig = KernelSig::reduce_merge(name, T::DTYPE);
            launch_grid(name, sig, (grid, 1, 1), threads_for(parts), args)?;
        }
        Ok(())
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `reduce_{op}_{T}(n_out, parts, chunk, count, lo, lr, x, partial, out, param)`.
    pub fn reduce(op: &str, t: DType) -> Self {
        let stem = alloc::format!("reduce_{op}");
        Self::new(
            "reduce",
            &stem,
            t,
            &[
                COUNT,
                COUNT,
                COUNT,
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                PTR,
                PTR,
                PTR,
                F64,
            ],
        )
    }
    /// `merge_{op}_{T}(n_out, parts, count, partial, out, param)`.
    pub fn reduce_merge(op: &str, t: DType) -> Self {
        let stem = alloc::format!("merge_{op}");
        Self::new("reduce", &stem, t, &[COUNT, COUNT, COUNT, PTR, PTR, F64])
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    for (op, bound) in super::REDUCE_STEMS {
        if bound.admits(t) {
            all.push(KernelSig::reduce(op, t));
            all.push(KernelSig::reduce_merge(op, t));
        }
    }
}
