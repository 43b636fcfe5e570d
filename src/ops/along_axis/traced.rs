//! The family's traced forms: each op's forward is the tensor op, its backward rule composed from tensor ops on the
//! padded gradient and saved values (a `fn` generic over the element type and device only, so each rule is
//! compiled once per element type and device, whatever the shapes).

use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::ops;
use crate::ops::Device;
use crate::shape::{HasAxis, Shape, MAX_RANK};
use crate::tensor::Grad;

/// What softmax's and log-softmax's rules keep: the input's slot, the output (padded) and the lane axis (of the
/// padded form).
type SoftmaxCaptured<T, D> = (Slot, Grad<T, D>, usize);

/// What the norms' rules keep: the input's slot, the input and the output (padded), the lane axis (of the padded
/// form) and `eps`.
type NormCaptured<T, D> = (Slot, [Grad<T, D>; 2], usize, f64);

/// The mask of lane axis `axis`.
fn lane_mask(axis: usize) -> [bool; MAX_RANK] {
    let mut lane = [false; MAX_RANK];
    lane[axis] = true;
    lane
}

/// `t`'s mean along lane axis `axis`, spread back over the lane.
fn lane_mean<T: FloatDType, D: Device>(t: &Grad<T, D>, axis: usize) -> Grad<T, D> {
    let n = t.dims()[axis] as f64;
    t.sum_spread(&lane_mask(axis)).affine(1.0 / n, 0.0)
}

/// Softmax's gradient: `y (g - sum(g y))`.
fn softmax_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, out, axis): SoftmaxCaptured<T, D>,
    store: &mut Gradients,
) {
    let gy = g.zip_same(ops::Mul, &out);
    let grad = out.zip_same(
        ops::Mul,
        &g.zip_same(ops::Sub, &gy.sum_spread(&lane_mask(axis))),
    );
    slot.give_padded(store, grad);
}

/// Log-softmax's gradient: `g - exp(y) sum(g)`.
fn log_softmax_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, out, axis): SoftmaxCaptured<T, D>,
    store: &mut Gradients,
) {
    let sums = g.sum_spread(&lane_mask(axis));
    let grad = g.zip_same(ops::Sub, &out.exp().zip_same(ops::Mul, &sums));
    slot.give_padded(store, grad);
}

/// Layer norm's gradient: `(g - mean(g) - y mean(g y)) / sqrt(var + eps)`.
fn layer_norm_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, [x, out], axis, eps): NormCaptured<T, D>,
    store: &mut Gradients,
) {
    let centred = x.zip_same(ops::Sub, &lane_mean(&x, axis));
    let inv_std = lane_mean(&centred.sqr(), axis)
        .affine(1.0, eps)
        .sqrt()
        .recip();
    let gy = lane_mean(&g.zip_same(ops::Mul, &out), axis);
    let inner = g
        .zip_same(ops::Sub, &lane_mean(&g, axis))
        .zip_same(ops::Sub, &out.zip_same(ops::Mul, &gy));
    slot.give_padded(store, inner.zip_same(ops::Mul, &inv_std));
}

/// RMS norm's gradient: `(g - y mean(g y)) / sqrt(mean(x^2) + eps)`.
fn rms_norm_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, [x, out], axis, eps): NormCaptured<T, D>,
    store: &mut Gradients,
) {
    let inv_rms = lane_mean(&x.sqr(), axis).affine(1.0, eps).sqrt().recip();
    let gy = lane_mean(&g.zip_same(ops::Mul, &out), axis);
    let grad = g
        .zip_same(ops::Sub, &out.zip_same(ops::Mul, &gy))
        .zip_same(ops::Mul, &inv_rms);
    slot.give_padded(store, grad);
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// `exp(x - max) / sum(exp(x - max))` along `Ax`; gradient `y (g - sum(g y))`.
    pub fn softmax<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.softmax::<Ax>();
        let captured = (self.slot(), y.padded(), self.padded_axis::<Ax>());
        record_with(y, &[&self.node], captured, softmax_rule::<T, D>)
    }

    /// `x - max - ln(sum(exp(x - max)))` along `Ax`; gradient `g - exp(y) sum(g)`.
    pub fn log_softmax<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.log_softmax::<Ax>();
        let captured = (self.slot(), y.padded(), self.padded_axis::<Ax>());
        record_with(y, &[&self.node], captured, log_softmax_rule::<T, D>)
    }

    /// `(x - mean) / sqrt(var + eps)` along `Ax`; gradient `(g - mean(g) - y mean(g y)) / sqrt(var + eps)`.
    pub fn layer_norm<Ax>(&self, eps: f64) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.layer_norm::<Ax>(eps);
        let saved = [self.value.padded(), y.padded()];
        let captured = (self.slot(), saved, self.padded_axis::<Ax>(), eps);
        record_with(y, &[&self.node], captured, layer_norm_rule::<T, D>)
    }

    /// `x / sqrt(mean(x^2) + eps)` along `Ax`; gradient `(g - y mean(g y)) / sqrt(mean(x^2) + eps)`.
    pub fn rms_norm<Ax>(&self, eps: f64) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.rms_norm::<Ax>(eps);
        let saved = [self.value.padded(), y.padded()];
        let captured = (self.slot(), saved, self.padded_axis::<Ax>(), eps);
        record_with(y, &[&self.node], captured, rms_norm_rule::<T, D>)
    }
}
