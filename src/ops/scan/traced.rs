//! The family's traced forms: each forward is the tensor op, each backward rule a `fn` generic over the element
//! type and device only, written with tensor ops on the padded gradient and saved values.

use super::Scan;
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::ops;
use crate::ops::Device;
use crate::shape::{HasAxis, Shape};
use crate::tensor::{call, written, Grad, Tensor};

/// `cumsum`'s gradient: the reverse running sum of `g`.
fn cumsum_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, axis): (Slot, usize),
    store: &mut Gradients,
) {
    slot.give_padded(store, g.scan_axis(Scan::Sum, axis, true));
}

/// `cumprod`'s gradient: the device's division-free lane recurrence (exact where the input has zeros).
fn cumprod_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, x, axis): (Slot, Grad<T, D>, usize),
    store: &mut Gradients,
) {
    let (lx, lg) = (x.layout(), g.layout());
    let (xv, gv) = ((x.buffer(), &lx), (g.buffer(), &lg));
    let dx = written!(
        Grad::<T, D>::written_by,
        x.shape(),
        "cumprod",
        call::cumprod_backward::<T, D>(xv, gv, axis),
    );
    slot.give_padded(store, dx);
}

/// `cummax`'s and `cummin`'s gradient: each output's gradient added at the index its value came from.
fn running_extreme_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, x, indices, axis): (Slot, Grad<T, D>, Grad<u32, D>, usize),
    store: &mut Gradients,
) {
    let idx = (indices.buffer(), &indices.layout());
    slot.give_padded(store, x.scatter_into_zeros("cummax", idx, &g, axis));
}

/// `logcumsumexp`'s gradient, `dx_i = sum_{j >= i} g_j exp(x_i - y_j)`, computed in log space as PyTorch does:
/// the positive and negative parts of `g` each as `exp(x + reverse_logcumsumexp(ln|g| - y))`, so no exponential
/// overflows.
fn logcumsumexp_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, [x, y], axis): (Slot, [Grad<T, D>; 2], usize),
    store: &mut Gradients,
) {
    let part = |g: Grad<T, D>| {
        g.relu()
            .ln()
            .zip_same(ops::Sub, &y)
            .scan_axis(Scan::LogSumExp, axis, true)
            .zip_same(ops::Add, &x)
            .exp()
    };
    let negated = g.affine(-1.0, 0.0);
    slot.give_padded(store, part(g).zip_same(ops::Sub, &part(negated)));
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Running sums along `Ax` (see [`Tensor::cumsum`]); gradient: the reverse running sum of `g`.
    pub fn cumsum<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.cumsum::<Ax>();
        record_with(
            y,
            &[&self.node],
            (self.slot(), self.padded_axis::<Ax>()),
            cumsum_rule::<T, D>,
        )
    }

    /// Running products along `Ax` (see [`Tensor::cumprod`]); the gradient is exact where the input has zeros.
    pub fn cumprod<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.cumprod::<Ax>();
        let captured = (self.slot(), self.value.padded(), self.padded_axis::<Ax>());
        record_with(y, &[&self.node], captured, cumprod_rule::<T, D>)
    }

    /// Running maxima along `Ax` and their indices (see [`Tensor::cummax`]); the gradient flows to the element
    /// each maximum came from.
    pub fn cummax<Ax>(&self) -> (Self, Tensor<u32, S, D>)
    where
        S: HasAxis<Ax>,
    {
        self.running_extreme(self.value.cummax::<Ax>(), self.padded_axis::<Ax>())
    }

    /// Running minima along `Ax` and their indices (see [`Tensor::cummin`]).
    pub fn cummin<Ax>(&self) -> (Self, Tensor<u32, S, D>)
    where
        S: HasAxis<Ax>,
    {
        self.running_extreme(self.value.cummin::<Ax>(), self.padded_axis::<Ax>())
    }

    fn running_extreme(
        &self,
        (y, indices): (Tensor<T, S, D>, Tensor<u32, S, D>),
        axis: usize,
    ) -> (Self, Tensor<u32, S, D>) {
        let captured = (self.slot(), self.value.padded(), indices.padded(), axis);
        (
            record_with(y, &[&self.node], captured, running_extreme_rule::<T, D>),
            indices,
        )
    }

    /// `ln(sum(exp(x)))` of each prefix along `Ax` (see [`Tensor::logcumsumexp`]).
    pub fn logcumsumexp<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.logcumsumexp::<Ax>();
        let captured = (
            self.slot(),
            [self.value.padded(), y.padded()],
            self.padded_axis::<Ax>(),
        );
        record_with(y, &[&self.node], captured, logcumsumexp_rule::<T, D>)
    }
}
