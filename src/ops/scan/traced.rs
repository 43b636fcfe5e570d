//! The family's traced forms: each forward is the tensor op, each backward rule a `fn` generic over the element
//! type and device only, written with tensor ops on the padded gradient and saved values.

use super::{Cumulative, Scan};
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::ops;
use crate::ops::Device;
use crate::shape::{HasAxis, Shape};
use crate::tensor::{call, written, Grad, Tensor};

/// `cumsum`'s gradient: the running sum of `g` the other way, as exclusive as the forward.
fn cumsum_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, axis, order): (Slot, usize, Cumulative),
    store: &mut Gradients,
) {
    slot.give_padded(store, g.scan_axis(Scan::Sum, axis, order.opposite()));
}

/// `cumprod`'s gradient: the device's division-free lane recurrence (exact where the input has zeros); a reverse
/// product's is the forward one's on the flipped lanes, flipped back.
fn cumprod_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, x, axis, order): (Slot, Grad<T, D>, usize, Cumulative),
    store: &mut Gradients,
) {
    let flip = |t: &Grad<T, D>| t.flip_axis(axis, t.dims()[axis]);
    let (x, g) = match order.reverse {
        true => (flip(&x), flip(&g)),
        false => (x, g),
    };
    let (lx, lg) = (x.layout(), g.layout());
    let (xv, gv) = ((x.buffer(), &lx), (g.buffer(), &lg));
    let dx = written!(
        Grad::<T, D>::written_by,
        x.shape(),
        "cumprod",
        call::cumprod_backward::<T, D>(xv, gv, axis, order.exclusive),
    );
    slot.give_padded(store, if order.reverse { flip(&dx) } else { dx });
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
            .scan_axis(Scan::LogSumExp, axis, Cumulative::REVERSE)
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
        self.cumsum_with::<Ax>(Cumulative::INCLUSIVE)
    }

    /// Running sums along `Ax` in `order` (see [`Tensor::cumsum_with`]); gradient: the running sum of `g` the
    /// other way.
    pub fn cumsum_with<Ax>(&self, order: Cumulative) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.cumsum_with::<Ax>(order);
        let captured = (self.slot(), self.padded_axis::<Ax>(), order);
        record_with(y, &[&self.node], captured, cumsum_rule::<T, D>)
    }

    /// Running products along `Ax` (see [`Tensor::cumprod`]); the gradient is exact where the input has zeros.
    pub fn cumprod<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.cumprod_with::<Ax>(Cumulative::INCLUSIVE)
    }

    /// Running products along `Ax` in `order` (see [`Tensor::cumprod_with`]); the gradient is exact where the
    /// input has zeros.
    pub fn cumprod_with<Ax>(&self, order: Cumulative) -> Self
    where
        S: HasAxis<Ax>,
    {
        let y = self.value.cumprod_with::<Ax>(order);
        let captured = (
            self.slot(),
            self.value.padded(),
            self.padded_axis::<Ax>(),
            order,
        );
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
