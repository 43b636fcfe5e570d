//! The family's CUDA kernels (`src/ops/resample/resample.cu`): a thread per output element forwards, a thread per lane
//! backwards (each lane's gradient is its own, so no two threads add into one element).

use super::{Resample, ResampleKernels};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{KernelLayout, KernelSig};
use crate::device::cuda::{dest, launch, Arg, CudaStorage};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

/// The arguments both kernels take after their layout and buffers: `inner`, the axis's stride, the sizes and the
/// op's code.
fn tail(op: Resample, layout: &Layout, axis: usize, [n_in, n_out]: [usize; 2]) -> [Arg; 6] {
    let inner: usize = layout.dims()[axis + 1..].iter().product();
    let (mode, align) = op.code();
    [
        Arg::U64(inner as u64),
        Arg::U64(layout.strides()[axis] as u64),
        Arg::U64(n_in as u64),
        Arg::U64(n_out as u64),
        Arg::U64(mode),
        Arg::U64(align),
    ]
}

// SAFETY: the forward kernel writes each output element; the backward kernel zeroes each lane before adding into
// it, and every lane of the output is some thread's.
unsafe impl ResampleKernels for Cuda {
    fn resample<T: FloatDType>(
        op: Resample,
        (x, lx): (&CudaStorage<T>, &Layout),
        axis: usize,
        n_out: usize,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        const OP: &str = "resample";
        let n_in = lx.dims()[axis];
        let mut dims = *lx.dims();
        dims.as_mut_slice()[axis] = n_out;
        let total = dims.numel();
        let out_ptr = dest(OP, out, total)?;
        if total == 0 || n_in == 0 {
            return Ok(()); // nothing to write (and no taps for an empty input)
        }
        // The input's layout with the output's dims and stride 0 on the axis: each output's lane.
        let mut strides = [0; crate::shape::MAX_RANK];
        strides[..lx.rank()].copy_from_slice(lx.strides());
        strides[axis] = 0;
        let lanes = Layout::from_parts(dims, &strides[..lx.rank()], 0);
        let mut args = alloc::vec![
            Arg::U64(total as u64),
            Arg::Layout(KernelLayout::new(&lanes)),
            Arg::U64(x.ptr_at(lx.offset())),
            Arg::U64(out_ptr),
        ];
        args.extend(tail(op, lx, axis, [n_in, n_out]));
        launch(OP, KernelSig::resample(T::DTYPE), total, args)
    }

    fn resample_backward<T: FloatDType>(
        op: Resample,
        (g, lg): (&CudaStorage<T>, &Layout),
        axis: usize,
        n_in: usize,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        const OP: &str = "resample_backward";
        let n_out = lg.dims()[axis];
        let mut dims = *lg.dims();
        dims.as_mut_slice()[axis] = n_in;
        let out_ptr = dest(OP, out, dims.numel())?;
        dims.as_mut_slice()[axis] = 1;
        let n_lanes = dims.numel();
        if n_lanes == 0 || n_in == 0 {
            return Ok(());
        }
        let lanes = Layout::from_parts(dims, lg.strides(), 0);
        let mut args = alloc::vec![
            Arg::U64(n_lanes as u64),
            Arg::Layout(KernelLayout::new(&lanes)),
            Arg::U64(g.ptr_at(lg.offset())),
            Arg::U64(out_ptr),
        ];
        args.extend(tail(op, lg, axis, [n_in, n_out]));
        launch(OP, KernelSig::resample_backward(T::DTYPE), n_lanes, args)
    }
}

/// The parameters of both resampling kernels (`src/ops/resample/resample.cu`).
const RESAMPLE_PARAMS: [usize; 10] = [
    COUNT,
    LAYOUT_BYTES,
    PTR,
    PTR,
    COUNT,
    COUNT,
    COUNT,
    COUNT,
    COUNT,
    COUNT,
];

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `resample_{T}(n, lanes, x, out, inner, step, n_in, n_out, mode, align)`.
    pub fn resample(t: DType) -> Self {
        Self::new("resample", "resample", t, &RESAMPLE_PARAMS)
    }
    /// `resample_backward_{T}(n_lanes, lanes, g, out, inner, step, n_in, n_out, mode, align)`.
    pub fn resample_backward(t: DType) -> Self {
        Self::new("resample", "resample_backward", t, &RESAMPLE_PARAMS)
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    if t.is_float() {
        all.push(KernelSig::resample(t));
        all.push(KernelSig::resample_backward(t));
    }
}
