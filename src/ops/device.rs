//! [`Device`]: what user code names (`D: Device`), the union of the storage layer's [`Kernels`] and every op
//! family's device trait. It lives with the families it gathers, so that the device layer (`crate::device`:
//! storage, views, the core kernels) imports nothing from the ops above it.

#[cfg(feature = "alloc")]
use crate::device::Cpu;
#[cfg(feature = "cuda")]
use crate::device::Cuda;
use crate::device::{Embedded, Kernels};
use crate::ops::{
    AlongAxisKernels, ConvKernels, CustomKernels, ElementwiseKernels, IndexingKernels, JoinKernels,
    MatmulKernels, OptimKernels, PoolKernels, ReduceKernels, ResampleKernels, ScanKernels,
    SortKernels,
};

/// A compute device: a zero-sized type that tensors carry as their `D` parameter. It implements [`Kernels`] (storage
/// and the core kernels) and the device trait of each op family in `src/ops/` ([`AlongAxisKernels`],
/// [`ConvKernels`], [`CustomKernels`], [`ElementwiseKernels`], [`IndexingKernels`], [`JoinKernels`], [`MatmulKernels`],
/// [`OptimKernels`], [`PoolKernels`], [`ReduceKernels`], [`ResampleKernels`], [`ScanKernels`], [`SortKernels`]); user code names only `D: Device`.
pub trait Device:
    Kernels
    + AlongAxisKernels
    + ConvKernels
    + CustomKernels
    + ElementwiseKernels
    + IndexingKernels
    + JoinKernels
    + MatmulKernels
    + OptimKernels
    + PoolKernels
    + ReduceKernels
    + ResampleKernels
    + ScanKernels
    + SortKernels
    + Copy
    + Default
    + core::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

/// `Self` is the device `D`: the bound of the operators between two tensors (`&a + &b`), written so that tensors
/// on two devices give one error naming both instead of a list of the operators' impls.
#[diagnostic::on_unimplemented(
    message = "tensors on `{Self}` and on `{D}` do not mix",
    label = "this operand is on `{Self}`, the other on `{D}`",
    note = "move one first: `.to_device::<{D}>()`"
)]
pub trait SameDevice<D: Device>: Device {
    /// The tensor, as a tensor on `D` (itself).
    fn same<T: crate::dtype::WithDType, S: crate::shape::Shape>(
        t: &crate::Tensor<T, S, Self>,
    ) -> &crate::Tensor<T, S, D>;
}

#[diagnostic::do_not_recommend]
impl<D: Device> SameDevice<D> for D {
    #[inline(always)]
    fn same<T: crate::dtype::WithDType, S: crate::shape::Shape>(
        t: &crate::Tensor<T, S, D>,
    ) -> &crate::Tensor<T, S, D> {
        t
    }
}

#[cfg(feature = "alloc")]
impl Device for Cpu {}
#[cfg(feature = "cuda")]
impl Device for Cuda {}
impl Device for Embedded {}

/// Every kernel the Rust side can launch: the core kernels (`device::cuda::kernels`), then each op family's (its
/// `cuda.rs` lists them). `tests/cuda_ptx.rs` checks it against the compiled PTX.
#[cfg(feature = "cuda")]
pub fn cuda_catalog() -> alloc::vec::Vec<crate::device::cuda::kernels::KernelSig> {
    use crate::device::cuda::kernels::{core_signatures, KernelSig};
    use crate::dtype::DType;
    use crate::ops::*;
    use alloc::vec::Vec;
    let families: [fn(DType, &mut Vec<KernelSig>); 12] = [
        elementwise::cuda::signatures,
        join::cuda::signatures,
        reduce::cuda::signatures,
        scan::cuda::signatures,
        sort::cuda::signatures,
        indexing::cuda::signatures,
        along_axis::cuda::signatures,
        matmul::cuda::signatures,
        conv::cuda::signatures,
        resample::cuda::signatures,
        optim::cuda::signatures,
        pool::cuda::signatures,
    ];
    let mut all = Vec::new();
    for t in DType::ALL {
        core_signatures(t, &mut all);
        for family in families {
            family(t, &mut all);
        }
    }
    all
}
