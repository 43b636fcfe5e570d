//! The op families, one folder each: the op's descriptor, its `Tensor` and `Traced` methods (forward and backward
//! side by side), the family's device trait (which [`crate::ops::Device`] requires) and its kernel for every
//! device (`cpu.rs`, `host.rs` for `Embedded` and loops both host devices share, `cuda.rs`, launching PTX built from
//! `<family>.cu` beside it).
//!
//! Each op is a small value (a descriptor) that carries the scalar function (what the host loops run) and the
//! kernel name stem (what CUDA launches as `{NAME}_{dtype}`, see [`kernel_name`]), so the two cannot drift; the
//! families' descriptors are re-exported here (`ops::Exp`, `ops::Sum`, `ops::Conv2dParams`, ...).

pub mod along_axis;
#[cfg(feature = "alloc")] // the `Cpu`'s: `Embedded` keeps its loops inline
pub(crate) mod compiled;
pub mod conv;
pub mod custom;
mod device;
pub mod elementwise;
/// The vectorisable f32 math of the host loops; it lives with the element types (`dtype::fast_math`), whose float
/// functions use it.
pub use crate::dtype::fast_math;
pub mod indexing;
pub mod join;
pub mod matmul;
pub mod optim;
pub mod pool;
pub mod reduce;
pub mod resample;
pub mod scan;
pub mod sort;
pub mod view;

pub use along_axis::{AlongAxis, AlongAxisKernels};
pub use conv::{Conv2dParams, Conv3dParams, ConvKernels};
pub use custom::CustomKernels;
#[cfg(feature = "cuda")]
pub use device::cuda_catalog;
pub use device::{Device, SameDevice};
pub use elementwise::*;
pub use indexing::IndexingKernels;
#[cfg(feature = "std")]
pub use join::TracedCatParts;
pub use join::{
    CatParts, Circular, Erased, FlipAxes, JoinKernels, PadMode, PadModeArg, Reflect, Replicate,
    SplitSizes,
};
pub use matmul::MatmulKernels;
pub use optim::{AdamStep, OptimKernels};
pub use pool::{Pool, PoolKernels, PoolParams};
pub use reduce::*;
pub use resample::{Interpolation, Resample, ResampleKernels};
pub use scan::{Cumulative, Scan, ScanKernels};
#[cfg(feature = "std")]
pub use sort::TracedTopkOutput;
pub use sort::{SortKernels, TopK, TopkOutput};

/// The one rule for kernel names, shared with the `.cu` macros: `{stem}_{dtype}`, e.g. `exp_f32`
/// ([`DType::kernel_name`](crate::dtype::DType::kernel_name)).
#[cfg(feature = "alloc")]
pub fn kernel_name(stem: &str, dtype: crate::dtype::DType) -> alloc::string::String {
    dtype.kernel_name(stem)
}
