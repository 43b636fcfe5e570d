//! The family's traced forms: sorted values are gathered from the input by the order, so their gradient
//! scatters back to the positions they came from (the gather's rule); the positions have no gradient.

use crate::autograd::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{Const, HasAxis, Shape};
use crate::tensor::Tensor;

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Each lane along `Ax` sorted, and the positions (see [`Tensor::sort`]); the gradient flows back to where
    /// each value came from.
    pub fn sort<Ax>(&self, descending: bool) -> (Self, Tensor<u32, S, D>)
    where
        S: HasAxis<Ax>,
    {
        let indices = self.value.argsort::<Ax>(descending);
        (
            self.gather_along(&indices, self.padded_axis::<Ax>()),
            indices,
        )
    }

    /// The `K` largest (or smallest) elements along `Ax` and their positions (see [`Tensor::topk`]); the gradient
    /// flows back to where each value came from.
    #[track_caller]
    #[allow(clippy::type_complexity)]
    pub fn topk<Ax, const K: usize>(
        &self,
        largest: bool,
    ) -> (
        Traced<T, <S as HasAxis<Ax>>::Replaced<Const<K>>, D>,
        Tensor<u32, <S as HasAxis<Ax>>::Replaced<Const<K>>, D>,
    )
    where
        S: HasAxis<Ax>,
    {
        let (_, indices) = self.value.topk::<Ax, K>(largest);
        (
            self.gather_along(&indices, self.padded_axis::<Ax>()),
            indices,
        )
    }
}
