//! Softmax, log-softmax, layer norm and RMS norm along a typed axis: numerically stable (max-shifted softmax,
//! two-pass variance over a lane held in cache), one read of each lane from memory, f32 accumulation for
//! f16/bf16.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [1000., 1000., 1000.]]);
//! let p = x.softmax::<Axis<1>>();
//! assert!((p.sum::<Axis<1>>().to_vec()[0] - 1.0).abs() < 1e-6);
//! assert_eq!(p.i(1).to_vec(), [1. / 3.; 3]); // no overflow at 1000
//! // The affine part of a layer norm is a broadcast multiply-add on the last axis:
//! let (gamma, beta) = (Tensor::<f32, Rank1<3>, Cpu>::full(2.0), Tensor::<f32, Rank1<3>, Cpu>::ones());
//! let y = &(&x.layer_norm::<Axis<1>>(1e-5) * &gamma) + &beta;
//! assert!((y.i((0, 1)).to_scalar() - 1.0).abs() < 1e-6);
//! ```

use super::AlongAxis;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{HasAxis, Shape};
use crate::tensor::{call, written, Tensor};

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    #[inline]
    fn along<Ax>(&self, op: AlongAxis) -> Self
    where
        S: HasAxis<Ax>,
    {
        if Self::MAYBE_TINY
            && let Some(out) = self.along_axis_tiny(op, S::INDEX)
        {
            return out;
        }
        self.along_kernel(op, S::INDEX)
    }

    /// [`Self::along`] through the device's kernel (out of line, so the tiny path stays small in the caller).
    #[inline(never)]
    fn along_kernel(&self, op: AlongAxis, axis: usize) -> Self {
        let src = (self.buffer(), &self.layout());
        // SAFETY: the closure is one kernel call, which writes all of its destination and reads none of it.
        unsafe {
            written!(
                Self::written_by,
                self.shape(),
                op.name(),
                call::along_axis::<T, D>(op, src, axis),
            )
        }
    }

    /// `exp(x - max) / sum(exp(x - max))` along `Ax`.
    pub fn softmax<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.along::<Ax>(AlongAxis::Softmax)
    }

    /// `x - max - ln(sum(exp(x - max)))` along `Ax` (stable where `softmax(..).ln()` underflows).
    pub fn log_softmax<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.along::<Ax>(AlongAxis::LogSoftmax)
    }

    /// `(x - mean) / sqrt(var + eps)` along `Ax`, with the population variance (PyTorch's `layer_norm` without
    /// its affine part; multiply and add `gamma`/`beta` with broadcasting).
    pub fn layer_norm<Ax>(&self, eps: f64) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.along::<Ax>(AlongAxis::LayerNorm { eps })
    }

    /// `x / sqrt(mean(x^2) + eps)` along `Ax` (RMSNorm without its gain).
    pub fn rms_norm<Ax>(&self, eps: f64) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.along::<Ax>(AlongAxis::RmsNorm { eps })
    }
}
