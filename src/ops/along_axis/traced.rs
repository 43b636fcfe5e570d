//! The family's traced forms: each op's forward is the tensor op, its backward rule composed from tensor ops.

use crate::autograd::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::ops;
use crate::shape::{HasAxis, Shape, MAX_RANK};
use crate::Tensor;

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// `exp(x - max) / sum(exp(x - max))` along `Ax`; gradient `y (g - sum(g y))`.
    pub fn softmax<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.softmax::<Ax>();
        let out = y.clone();
        self.unary_op(y, move |g| {
            let mut lane = [false; MAX_RANK];
            lane[S::INDEX] = true;
            let gy = g.zip_same(ops::Mul, &out);
            out.zip_same(ops::Mul, &g.zip_same(ops::Sub, &gy.sum_spread(&lane)))
        })
    }

    /// `x - max - ln(sum(exp(x - max)))` along `Ax`; gradient `g - exp(y) sum(g)`.
    pub fn log_softmax<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.log_softmax::<Ax>();
        let out = y.clone();
        self.unary_op(y, move |g| {
            let mut lane = [false; MAX_RANK];
            lane[S::INDEX] = true;
            g.zip_same(
                ops::Sub,
                &out.exp().zip_same(ops::Mul, &g.sum_spread(&lane)),
            )
        })
    }

    /// `(x - mean) / sqrt(var + eps)` along `Ax`; gradient `(g - mean(g) - y mean(g y)) / sqrt(var + eps)`.
    pub fn layer_norm<Ax>(&self, eps: f64) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.layer_norm::<Ax>(eps);
        let (x, out) = (self.value.clone(), y.clone());
        self.unary_op(y, move |g| {
            let (lane, n) = lane_of::<S>(&x, S::INDEX);
            let mean = |t: &Tensor<T, S, D>| t.sum_spread(&lane).affine(1.0 / n, 0.0);
            let centred = x.zip_same(ops::Sub, &mean(&x));
            let inv_std = mean(&centred.sqr()).affine(1.0, eps).sqrt().recip();
            let gy = mean(&g.zip_same(ops::Mul, &out));
            let inner = g
                .zip_same(ops::Sub, &mean(&g))
                .zip_same(ops::Sub, &out.zip_same(ops::Mul, &gy));
            inner.zip_same(ops::Mul, &inv_std)
        })
    }

    /// `x / sqrt(mean(x^2) + eps)` along `Ax`; gradient `(g - y mean(g y)) / sqrt(mean(x^2) + eps)`.
    pub fn rms_norm<Ax>(&self, eps: f64) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.rms_norm::<Ax>(eps);
        let (x, out) = (self.value.clone(), y.clone());
        self.unary_op(y, move |g| {
            let (lane, n) = lane_of::<S>(&x, S::INDEX);
            let mean = |t: &Tensor<T, S, D>| t.sum_spread(&lane).affine(1.0 / n, 0.0);
            let inv_rms = mean(&x.sqr()).affine(1.0, eps).sqrt().recip();
            let gy = mean(&g.zip_same(ops::Mul, &out));
            g.zip_same(ops::Sub, &out.zip_same(ops::Mul, &gy))
                .zip_same(ops::Mul, &inv_rms)
        })
    }
}

/// The mask of lane axis `axis` and the lane length.
fn lane_of<S: Shape>(
    x: &Tensor<impl FloatDType, S, impl Device>,
    axis: usize,
) -> ([bool; MAX_RANK], f64) {
    let mut lane = [false; MAX_RANK];
    lane[axis] = true;
    (lane, x.dims()[axis] as f64)
}
