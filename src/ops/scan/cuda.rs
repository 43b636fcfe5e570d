//! The family's CUDA kernels (`src/ops/scan/scan.cu`): a thread per lane, walking it in order.

use super::{Cumulative, Scan, ScanKernels};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::KernelSig;
use crate::device::cuda::{dest, lane_walk, launch, Arg, CudaStorage};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

// SAFETY: every kernel writes each element of its output (a thread per lane, each lane's every element), and
// device memory is never read as host values without a copy.
unsafe impl ScanKernels for Cuda {
    fn scan<T: WithDType>(
        op: Scan,
        (storage, layout): (&CudaStorage<T>, &Layout),
        axis: usize,
        order: Cumulative,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let out_ptr = dest(op.name(), out, layout.numel())?;
        if layout.numel() == 0 {
            return Ok(()); // no lane has an element, however many lanes there are
        }
        let (count, mut args) = lane_walk(&[layout], axis);
        args.extend([
            Arg::U64(storage.ptr_at(layout.offset())),
            Arg::U64(out_ptr),
            Arg::U64(order.flags()),
        ]);
        launch(op.name(), KernelSig::scan(op.name(), T::DTYPE), count, args)
    }

    fn scan_index<T: WithDType>(
        op: Scan,
        (storage, layout): (&CudaStorage<T>, &Layout),
        axis: usize,
        out: &mut CudaStorage<u32>,
    ) -> Result<()> {
        let out_ptr = dest(op.name(), out, layout.numel())?;
        if layout.numel() == 0 {
            return Ok(());
        }
        let (count, mut args) = lane_walk(&[layout], axis);
        args.extend([Arg::U64(storage.ptr_at(layout.offset())), Arg::U64(out_ptr)]);
        launch(
            op.name(),
            KernelSig::scan_index(op.name(), T::DTYPE),
            count,
            args,
        )
    }

    fn cumprod_backward<T: WithDType>(
        (x, lx): (&CudaStorage<T>, &Layout),
        (g, lg): (&CudaStorage<T>, &Layout),
        axis: usize,
        exclusive: bool,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let out_ptr = dest("cumprod", out, lx.numel())?;
        if lx.numel() == 0 {
            return Ok(());
        }
        let (count, mut args) = lane_walk(&[lx, lg], axis);
        args.extend([
            Arg::U64(x.ptr_at(lx.offset())),
            Arg::U64(g.ptr_at(lg.offset())),
            Arg::U64(out_ptr),
            Arg::U64(exclusive as u64),
        ]);
        launch(
            "cumprod",
            KernelSig::cumprod_backward(T::DTYPE),
            count,
            args,
        )
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `scan_{op}_{T}(<lane walk>, x, out, flags)`: flags bit 0 reverse, bit 1 exclusive.
    pub fn scan(op: &str, t: DType) -> Self {
        Self::lane_kernel("scan", &alloc::format!("scan_{op}"), t, &[PTR, PTR, COUNT])
    }
    /// `scan_index_{op}_{T}(<lane walk>, x, out)`.
    pub fn scan_index(op: &str, t: DType) -> Self {
        Self::lane_kernel("scan", &alloc::format!("scan_index_{op}"), t, &[PTR, PTR])
    }
    /// `cumprod_backward_{T}(lanes, len, outer_x, outer_g, outer_out, x_stride, g_stride, out_stride, x, g, out,
    /// exclusive)`.
    pub fn cumprod_backward(t: DType) -> Self {
        let params = [
            COUNT,
            COUNT,
            LAYOUT_BYTES,
            LAYOUT_BYTES,
            LAYOUT_BYTES,
            COUNT,
            COUNT,
            COUNT,
            PTR,
            PTR,
            PTR,
            COUNT,
        ];
        Self::new("scan", "cumprod_backward", t, &params)
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    for op in Scan::ALL {
        if !op.floats_only() || t.is_float() {
            all.push(KernelSig::scan(op.name(), t));
        }
    }
    for op in [Scan::Max, Scan::Min] {
        all.push(KernelSig::scan_index(op.name(), t));
    }
    if t.is_float() {
        all.push(KernelSig::cumprod_backward(t));
    }
}
