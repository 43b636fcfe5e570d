//! Matrix products: the `Tensor` methods (`matmul` with its batch and broadcast forms, `tensor.rs`), the traced
//! form and its backward rule (`traced.rs`), and the device side: [`MatmulKernels`], implemented with the `gemm`
//! crates on the CPU (`cpu.rs`), a direct loop on `Embedded` and for tiny static products (`host.rs`), and the
//! tiled PTX GEMM on CUDA (`cuda.rs`).

#[cfg(feature = "alloc")]
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod host;
mod tensor;
pub(crate) use tensor::matmul_views;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::Kernels;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;

/// The family's kernel, which every device implements; [`crate::ops::Device`] requires it beside [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: `matmul` initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait MatmulKernels: Kernels {
    /// Batched matrix product: `lhs` has dims `[B, M, K]`, `rhs` `[B, K, N]` (an operand shared by every batch has
    /// batch stride 0); the output is `[B, M, N]`. Low-precision types accumulate in f32.
    fn matmul<T: FloatDType>(
        lhs: (&Self::Buffer<T>, &Layout),
        rhs: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}
