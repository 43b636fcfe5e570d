//! The traced joins and rearrangements: `cat` and `stack` (each input's gradient is its slice of the output's),
//! `flip`, `roll`, `pad`, `split` (each gradient undoes the rearrangement).

use crate::autograd::{Traceable, Traced};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{AgreeExceptAxis, Const, HasAxis, InsertAxis, Shape};
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

    /// The entries of axis `Ax` in reverse order.
    pub fn flip<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.unary_op(self.value.flip::<Ax>(), |g| g.flip::<Ax>())
    }

    /// The entries of axis `Ax` rotated by `shift` (positive: towards higher indices).
    pub fn roll<Ax>(&self, shift: isize) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.unary_op(self.value.roll::<Ax>(shift), move |g| g.roll::<Ax>(-shift))
    }

    /// `BEFORE` zeros, the tensor, `AFTER` zeros along `Ax` (see [`Tensor::pad`]).
    #[track_caller]
    pub fn pad<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        let shape = self.value.shape();
        self.unary_op(self.value.pad::<Ax, BEFORE, AFTER, OUT>(), move |g| {
            g.narrow_to(shape, S::INDEX, BEFORE)
        })
    }

    /// `N` consecutive pieces of `LEN` entries along `Ax` (see [`Tensor::split`]).
    #[track_caller]
    pub fn split<Ax, const LEN: usize, const N: usize>(
        &self,
    ) -> [Traced<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>; N]
    where
        S: HasAxis<Ax>,
    {
        let pieces = self.value.split::<Ax, LEN, N>();
        let shape = self.value.shape();
        let mut pieces = pieces.into_iter();
        core::array::from_fn(|i| {
            let piece = pieces.next().expect("N pieces");
            self.unary_op(piece, move |g| g.embed_in(shape, S::INDEX, i * LEN))
        })
    }
}
