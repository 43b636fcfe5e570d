//! Rearranging ops: `flip`, `roll`, `pad`, `split` (each gradient undoes the rearrangement, summing where the op
//! repeated elements).

use crate::autograd::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;

use crate::shape::{Const, HasAxis, Shape};

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
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
