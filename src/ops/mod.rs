//! The op families, one folder each: the op's descriptor, its `Tensor` and `Traced` methods (forward and backward
//! side by side), the family's device trait (which [`crate::device::Device`] requires) and its kernel for every
//! device (`cpu.rs`, `host.rs` for `Embedded` and loops both host devices share, `cuda.rs`, launching PTX built from
//! `ptx/<family>.cu`).
//!
//! Each op is a small value (a descriptor) that carries the scalar function (what the host loops run) and the
//! kernel name stem (what CUDA launches as `{NAME}_{dtype}`, see [`kernel_name`]), so the two cannot drift; the
//! families' descriptors are re-exported here (`ops::Exp`, `ops::Sum`, `ops::Conv2dParams`, ...).

pub mod along_axis;
pub mod conv;
pub mod elementwise;
pub mod fast_math;
pub mod indexing;
pub mod matmul;
pub mod reduce;

pub use along_axis::{AlongAxis, AlongAxisKernels};
pub use conv::{Conv2dParams, ConvKernels, Pool};
pub use elementwise::*;
pub use indexing::IndexingKernels;
pub use matmul::MatmulKernels;
pub use reduce::*;

/// One Adam/AdamW step for a fused device kernel, per element (`t` the step count):
/// `g += l2 * w; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
/// w = keep * w - lr_t * m / (sqrt(v / bc2) + eps)`, with `lr_t = lr / (1 - beta1^t)`, `bc2 = 1 - beta2^t`,
/// `keep = 1 - lr * decoupled_decay`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamStep {
    /// `lr / (1 - beta1^t)`.
    pub lr_t: f64,
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
    pub beta2: f64,
    /// `1 - beta2^t`.
    pub bc2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// Adam's L2 term added to the gradient (0 for AdamW).
    pub l2: f64,
    /// AdamW's decoupled factor on the weight before the step (1 for Adam).
    pub keep: f64,
}

/// The one rule for kernel names, shared with the `.cu` macros: `{stem}_{dtype}`, e.g. `exp_f32`.
#[cfg(feature = "alloc")]
pub fn kernel_name(stem: &str, dtype: crate::dtype::DType) -> alloc::string::String {
    alloc::format!("{stem}_{}", dtype.as_str())
}
