//! Fused optimizer updates: one pass over a parameter, its moments and its gradient instead of a dozen tensor ops
//! (each a pass and an allocation). The descriptor is [`AdamStep`]; the device side is [`OptimKernels`], one
//! host body for `Cpu` and `Embedded` (`host.rs`) and `src/ops/optim/optim.cu` on CUDA (`cuda.rs`). The optimizers
//! themselves are in [`crate::optim`] (with `std`).

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod host;

use crate::device::Kernels;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;

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

/// The family's kernel, which every device implements; [`crate::ops::Device`] requires it beside [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: the update writes only initialised values.
pub unsafe trait OptimKernels: Kernels {
    /// One fused [`AdamStep`] over dense buffers `w`, `m`, `v` (in place, buffers the caller alone holds) from a
    /// dense `grad`, all of `grad`'s numel. A strided `grad` is an error.
    fn adam_step<T: FloatDType>(
        w: &mut Self::Buffer<T>,
        m: &mut Self::Buffer<T>,
        v: &mut Self::Buffer<T>,
        grad: (&Self::Buffer<T>, &Layout),
        step: AdamStep,
    ) -> Result<()>;
}
