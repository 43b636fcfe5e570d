//! Joining, dtype conversion and the normalisations: `cat` and `stack` (each input's gradient is its slice of
//! the output's), `to_dtype` (the gradient converts back), `layer_norm`, `rms_norm`, `logsumexp`.

use crate::autograd::{Traceable, Traced};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::ops;
use crate::shape::{AgreeExceptAxis, Const, HasAxis, InsertAxis, ReduceShape, Shape};
use crate::tensor::Tensor;

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// `self` and `other` laid end to end along `Ax` (see [`Tensor::cat`]).
    #[track_caller]
    pub fn cat<Ax, const OUT: usize, R>(
        &self,
        other: &R,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: AgreeExceptAxis<R::Shape, Ax>,
    {
        let other = other.traced();
        let value = self.value.cat::<Ax, OUT, R::Shape>(&other.value);
        let (sa, sb) = (self.slot(), other.slot());
        let (shape_a, shape_b) = (self.value.shape(), other.value.shape());
        let len_a = shape_a.dims()[S::INDEX];
        Self::record(value, &[&self.node, &other.node], move |g, grads| {
            sa.give(grads, || g.narrow_to(shape_a, S::INDEX, 0));
            sb.give(grads, || g.narrow_to(shape_b, S::INDEX, len_a));
        })
    }

    /// `N` values of one shape stacked along a new axis `Ax` (see [`Tensor::stack`]).
    #[track_caller]
    pub fn stack<Ax, const N: usize>(
        parts: &[Self; N],
    ) -> Traced<T, <S as InsertAxis<Ax>>::Output<Const<N>>, D>
    where
        S: InsertAxis<Ax>,
    {
        let values: [Tensor<T, S, D>; N] = core::array::from_fn(|i| parts[i].value.clone());
        let value = Tensor::stack::<Ax, N>(&values);
        let slots: [_; N] = core::array::from_fn(|i| parts[i].slot());
        let shape = parts[0].value.shape();
        let nodes: [_; N] = core::array::from_fn(|i| &parts[i].node);
        let axis = <S as InsertAxis<Ax>>::INDEX;
        Self::record(value, &nodes, move |g, grads| {
            for (i, slot) in slots.into_iter().enumerate() {
                slot.give(grads, || g.select_to(shape, axis, i));
            }
        })
    }

    /// Every element converted to `U`; the gradient converts back to `T`.
    pub fn to_dtype<U: FloatDType>(&self) -> Traced<U, S, D> {
        let slot = self.slot();
        Self::record(
            self.value.to_dtype::<U>(),
            &[&self.node],
            move |g, grads| slot.give(grads, || g.to_dtype::<T>()),
        )
    }

    /// `ln(sum(exp(x)))` over the axes `Axes` (max-shifted); gradient `g softmax(x)` over those axes.
    pub fn logsumexp<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        let lse = self.value.logsumexp::<Axes>();
        let (x, out) = (self.value.clone(), lse.clone());
        self.unary_op(lse, move |g| {
            let reduced = S::REDUCED;
            let shift = out.spread_over(x.shape(), &reduced);
            let softmax = x.zip_same(ops::Sub, &shift).exp();
            g.spread_over(x.shape(), &reduced)
                .zip_same(ops::Mul, &softmax)
        })
    }
}
