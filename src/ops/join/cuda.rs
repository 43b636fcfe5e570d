//! The family's CUDA launcher: each part copied into its slab of the output by `copy_into` (`ptx/copy.cu`).

use super::JoinKernels;
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{KernelLayout, KernelSig};
use crate::device::cuda::{dest, launch, Arg, CudaStorage};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

// SAFETY: the parts tile the output along `axis`, so the copies write every element; nothing reads `out`.
unsafe impl JoinKernels for Cuda {
    fn concat<T: WithDType>(
        parts: &[(&CudaStorage<T>, &Layout)],
        axis: usize,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        // Each part is copied into its slab of the dense output: a narrowed view of it.
        let Some((_, first)) = parts.first() else {
            return Ok(());
        };
        let mut dims = *first.dims();
        dims.as_mut_slice()[axis] = parts.iter().map(|(_, l)| l.dims()[axis]).sum();
        let whole = Layout::contiguous(dims);
        dest("cat", out, whole.numel())?;
        let mut start = 0;
        for (storage, layout) in parts {
            let len = layout.dims()[axis];
            let slab = whole.narrow("cat", axis, start, len)?;
            start += len;
            let args = alloc::vec![
                Arg::U64(layout.numel() as u64),
                Arg::Layout(KernelLayout::new(layout)),
                Arg::Layout(KernelLayout::new(&slab)),
                Arg::U64(storage.ptr_at(layout.offset())),
                Arg::U64(out.ptr_at(slab.offset())),
            ];
            launch("cat", KernelSig::copy_into(T::DTYPE), layout.numel(), args)?;
        }
        Ok(())
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `copy_into_{T}(n, src_layout, dst_layout, x, out)`.
    pub fn copy_into(t: DType) -> Self {
        Self::new(
            "copy",
            "copy_into",
            t,
            &[COUNT, LAYOUT_BYTES, LAYOUT_BYTES, PTR, PTR],
        )
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    all.push(KernelSig::copy_into(t));
}
