//! The family's CUDA kernel: `adam_step_{dtype}` from `src/ops/optim/optim.cu`, one thread per few parameters.

use super::{AdamStep, OptimKernels};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{AdamCoefficients, KernelSig};
use crate::device::cuda::{cuda_err, dest, launch, Arg, CudaStorage};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

// SAFETY: the kernel updates `w`, `m` and `v` in place (buffers the caller alone holds, already initialised) and
// writes nothing else.
unsafe impl OptimKernels for Cuda {
    fn adam_step<T: FloatDType>(
        w: &mut CudaStorage<T>,
        m: &mut CudaStorage<T>,
        v: &mut CudaStorage<T>,
        (g, lg): (&CudaStorage<T>, &Layout),
        step: AdamStep,
    ) -> Result<()> {
        // In place, as on the CPU, from a dense gradient (the tensor layer passes buffers it alone holds).
        let range = lg
            .contiguous_range()
            .ok_or_else(|| cuda_err("adam_step", "the gradient must be dense"))?;
        let n = range.len();
        let (wp, mp, vp) = (
            dest("adam_step", w, n)?,
            dest("adam_step", m, n)?,
            dest("adam_step", v, n)?,
        );
        let args = alloc::vec![
            Arg::U64(n as u64),
            Arg::Adam(AdamCoefficients::new(&step)),
            Arg::U64(wp),
            Arg::U64(mp),
            Arg::U64(vp),
            Arg::U64(g.ptr_at(range.start)),
        ];
        launch("adam_step", KernelSig::adam_step(T::DTYPE), n, args)
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `adam_step_{T}(n, coefficients, w, m, v, g)`.
    pub fn adam_step(t: DType) -> Self {
        let coefficients = core::mem::size_of::<AdamCoefficients>();
        Self::new(
            "optim",
            "adam_step",
            t,
            &[COUNT, coefficients, PTR, PTR, PTR, PTR],
        )
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    if t.is_float() {
        all.push(KernelSig::adam_step(t));
    }
}

impl AdamCoefficients {
    /// The kernel's view of a step.
    pub fn new(s: &AdamStep) -> Self {
        AdamCoefficients {
            values: [
                s.lr_t,
                s.beta1,
                s.beta2,
                s.eps,
                s.l2,
                s.keep,
                1.0 - s.beta1,
                1.0 - s.beta2,
                1.0 / s.bc2,
            ],
        }
    }
}
