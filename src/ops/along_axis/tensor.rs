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
use crate::device::INLINE_BYTES;
use crate::dtype::{Accumulator, FloatDType};
use crate::ops::Device;
use crate::shape::{HasAxis, Shape};
use crate::tensor::tiny::{run, OpCall};
use crate::tensor::{call, written, Tensor};

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    #[inline]
    fn along<Ax>(&self, op: AlongAxis) -> Self
    where
        S: HasAxis<Ax>,
    {
        run(Along {
            op,
            x: self,
            axis: S::INDEX,
        })
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

/// [`Tensor::softmax`]'s call, and the other ops along an axis.
struct Along<'a, T: FloatDType, S: Shape, D: Device> {
    op: AlongAxis,
    x: &'a Tensor<T, S, D>,
    axis: usize,
}

impl<T: FloatDType, S: Shape, D: Device> OpCall for Along<'_, T, S, D> {
    type T = T;
    type S = S;
    type Output = Tensor<T, S, D>;

    /// Each lane is widened into a stack buffer, transformed by [`AlongAxis::apply`] and rounded, as the kernel
    /// does, so the result has the same bits.
    #[inline]
    fn tiny(&mut self) -> Option<Self::Output> {
        let a = self.x.tiny_elements()?;
        let n = a.len();
        let dims = self.x.dims();
        let len = dims[self.axis];
        let stride: usize = dims[self.axis + 1..].iter().product();
        let mut out = Tensor::host_output(self.x.shape(), n)?;
        if n == 0 {
            return Some(out);
        }
        let o = &mut out.host_elements_mut()?[..n];
        // The longest lane a tiny float tensor has: INLINE_BYTES of 2-byte elements.
        let mut lane = [T::Acc::ZERO; INLINE_BYTES / 2];
        let lane = &mut lane[..len];
        for base in (0..n).step_by(len * stride) {
            for start in base..base + stride {
                for (i, l) in lane.iter_mut().enumerate() {
                    *l = a[start + i * stride].to_acc();
                }
                self.op.apply(lane);
                for (i, &l) in lane.iter().enumerate() {
                    o[start + i * stride] = T::from_acc(l);
                }
            }
        }
        Some(out)
    }

    #[inline(never)]
    fn kernel(self) -> Self::Output {
        let src = (self.x.buffer(), &self.x.layout());
        written!(
            Tensor::written_by,
            self.x.shape(),
            self.op.name(),
            call::along_axis::<T, D>(self.op, src, self.axis),
        )
    }
}
