//! The family's CUDA launchers: `{op}_{dtype}` from `src/ops/elementwise/unary.cu` and `src/ops/elementwise/binary.cu` (comparisons and `where`
//! included), each one thread per few elements through `run_into`.

use super::{BinaryOp, CmpOp, ElementwiseKernels, UnaryOp};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{KernelLayout, KernelSig};
use crate::device::cuda::{dest, run_into, views, Arg, CudaStorage};
use crate::device::{Cuda, Operand};
use crate::dtype::DType;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

// SAFETY: every launch writes each of the output's elements on the GPU; only `Operand::Out` reads the destination.
unsafe impl ElementwiseKernels for Cuda {
    fn unary<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        src: Operand<'_, CudaStorage<T>>,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let n = src.numel();
        let ptr = dest(Op::NAME, out, n)?;
        let inputs = match src {
            Operand::View(src, ls) => views([Arg::view(src, ls)]),
            Operand::Out(dims) => alloc::vec![
                Arg::Layout(KernelLayout::new(&Layout::contiguous(*dims))),
                Arg::U64(ptr)
            ],
        };
        let sig = KernelSig::unary(Op::NAME, T::DTYPE);
        let scalars = op.params().map(Arg::scalar).into();
        run_into(Op::NAME, sig, n, inputs, ptr, scalars)
    }

    fn binary<T: WithDType, Op: BinaryOp<T>>(
        _op: Op,
        lhs: Operand<'_, CudaStorage<T>>,
        (b, lb): (&CudaStorage<T>, &Layout),
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let n = lb.numel();
        let ptr = dest(Op::NAME, out, n)?;
        let inputs = match lhs {
            Operand::View(a, la) => views([Arg::view(a, la), Arg::view(b, lb)]),
            Operand::Out(dims) => alloc::vec![
                Arg::Layout(KernelLayout::new(&Layout::contiguous(*dims))),
                Arg::Layout(KernelLayout::new(lb)),
                Arg::U64(ptr),
                Arg::U64(b.ptr_at(lb.offset())),
            ],
        };
        let sig = KernelSig::binary(Op::NAME, T::DTYPE);
        run_into(Op::NAME, sig, n, inputs, ptr, Vec::new())
    }

    fn compare<T: WithDType>(
        op: CmpOp,
        (a, la): (&CudaStorage<T>, &Layout),
        (b, lb): (&CudaStorage<T>, &Layout),
        out: &mut CudaStorage<u8>,
    ) -> Result<()> {
        let sig = KernelSig::binary(op.name(), T::DTYPE);
        let n = la.numel();
        let inputs = views([Arg::view(a, la), Arg::view(b, lb)]);
        run_into(
            op.name(),
            sig,
            n,
            inputs,
            dest(op.name(), out, n)?,
            Vec::new(),
        )
    }

    fn where_cond<T: WithDType>(
        (m, lm): (&CudaStorage<u8>, &Layout),
        (t, lt): (&CudaStorage<T>, &Layout),
        (f, lf): (&CudaStorage<T>, &Layout),
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let sig = KernelSig::where_cond(T::DTYPE);
        let n = lm.numel();
        let inputs = views([Arg::view(m, lm), Arg::view(t, lt), Arg::view(f, lf)]);
        run_into(
            "where_cond",
            sig,
            n,
            inputs,
            dest("where_cond", out, n)?,
            Vec::new(),
        )
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `{op}_{T}(n, layout, x, out, p0, p1)`.
    pub fn unary(op: &str, t: DType) -> Self {
        let s = t.size_in_bytes();
        Self::new("unary", op, t, &[COUNT, LAYOUT_BYTES, PTR, PTR, s, s])
    }
    /// `{op}_{T}(n, la, lb, a, b, out)`; comparisons have the same parameters with a `u8` output.
    pub fn binary(op: &str, t: DType) -> Self {
        Self::new(
            "binary",
            op,
            t,
            &[COUNT, LAYOUT_BYTES, LAYOUT_BYTES, PTR, PTR, PTR],
        )
    }
    /// `where_{T}(n, lm, lt, lf, m, t, f, out)`.
    pub fn where_cond(t: DType) -> Self {
        Self::new(
            "binary",
            "where",
            t,
            &[
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    for (op, bound) in super::UNARY_STEMS {
        if bound.admits(t) {
            all.push(KernelSig::unary(op, t));
        }
    }
    if t.is_float() {
        for op in super::PARAM_STEMS {
            all.push(KernelSig::unary(op, t));
        }
        for op in super::FLOAT_BINARY_STEMS {
            all.push(KernelSig::binary(op, t));
        }
    }
    if t.is_int() {
        for op in super::INT_BINARY_STEMS {
            all.push(KernelSig::binary(op, t));
        }
    }
    for op in super::BINARY_STEMS
        .iter()
        .chain(CmpOp::ALL.map(|c| c.name()).iter())
    {
        all.push(KernelSig::binary(op, t));
    }
    all.push(KernelSig::where_cond(t));
}
