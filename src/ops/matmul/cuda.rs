//! The family's CUDA kernel: the tiled GEMM of `src/ops/matmul/matmul.cu` (tensor cores for f16/bf16 where the GPU has
//! them), launched through the device's `gemm` plumbing, which the convolutions share.

use super::MatmulKernels;
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{GemmDims, KernelSig};
use crate::device::cuda::{dest, gemm, CudaStorage};
use crate::device::Cuda;
use crate::dtype::DType;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;
use alloc::vec::Vec;

// SAFETY: the product writes every output element, and device memory is never read as host values without a
// copy.
unsafe impl MatmulKernels for Cuda {
    fn matmul<T: FloatDType>(
        (a, la): (&CudaStorage<T>, &Layout),
        (b, lb): (&CudaStorage<T>, &Layout),
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let (da, db) = (la.dims(), lb.dims());
        let (batch, m, k, n) = (da[0], da[1], da[2], db[2]);
        let out_ptr = dest("matmul", out, batch * m * n)?;
        let (sa, sb) = (la.strides(), lb.strides());
        let dims = GemmDims {
            batch: batch as u64,
            m: m as u64,
            n: n as u64,
            k: k as u64,
            a: [sa[0] as u64, sa[1] as u64, sa[2] as u64],
            b: [sb[0] as u64, sb[1] as u64, sb[2] as u64],
            c: [(m * n) as u64, n as u64],
        };
        gemm::<T>(
            "matmul",
            dims,
            a.ptr_at(la.offset()),
            b.ptr_at(lb.offset()),
            out_ptr,
        )
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `matmul_{T}(dims, a, b, c)`.
    pub fn matmul(t: DType) -> Self {
        Self::new("matmul", "matmul", t, &[GEMM_BYTES, PTR, PTR, PTR])
    }
    /// `matmul_tc_{T}(dims, a, b, c)`, the tensor-core form for f16 (module `matmul`) and bf16 (`matmul_sm80`).
    pub fn matmul_tensor_core(t: DType) -> Self {
        let module = if t == DType::BF16 {
            "matmul_sm80"
        } else {
            "matmul"
        };
        Self::new(module, "matmul_tc", t, &[GEMM_BYTES, PTR, PTR, PTR])
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    if t.is_float() {
        all.push(KernelSig::matmul(t));
        if t == DType::F16 || t == DType::BF16 {
            all.push(KernelSig::matmul_tensor_core(t));
        }
    }
}
