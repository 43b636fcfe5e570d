//! The family's traced forms: sorted values are gathered from the input by the order, so their gradient
//! scatters back to the positions they came from (the gather's rule); the positions have no gradient.

use super::TopK;
use crate::autograd::Traced;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::ops::Device;
use crate::shape::{Const, HasAxis, ReduceShape, Shape};
use crate::tensor::{or_panic, Tensor};

/// What traced `topk` gives: the `K` traced values along `Ax` and their `u32` positions.
pub type TracedTopkOutput<T, S, Ax, D, const K: usize> = (
    Traced<T, <S as HasAxis<Ax>>::Replaced<Const<K>>, D>,
    Tensor<u32, <S as HasAxis<Ax>>::Replaced<Const<K>>, D>,
);

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
    pub fn topk<Ax, const K: usize>(&self, largest: bool) -> TracedTopkOutput<T, S, Ax, D, K>
    where
        S: HasAxis<Ax>,
    {
        or_panic(self.try_topk::<Ax, K>(largest))
    }

    /// [`Self::topk`], returning `Error::AxisTooShort` when `K` is larger than a runtime-sized axis (see
    /// [`Tensor::try_topk`]).
    pub fn try_topk<Ax, const K: usize>(
        &self,
        largest: bool,
    ) -> Result<TracedTopkOutput<T, S, Ax, D, K>>
    where
        S: HasAxis<Ax>,
    {
        self.try_topk_with::<Ax, K>(TopK {
            largest,
            sorted: true,
        })
    }

    /// The `K` largest (or smallest) elements along `Ax`, by value or in their order along the axis (see
    /// [`Tensor::topk_with`]); the gradient flows back to where each value came from.
    #[track_caller]
    pub fn topk_with<Ax, const K: usize>(&self, options: TopK) -> TracedTopkOutput<T, S, Ax, D, K>
    where
        S: HasAxis<Ax>,
    {
        or_panic(self.try_topk_with::<Ax, K>(options))
    }

    /// [`Self::topk_with`], returning `Error::AxisTooShort` when `K` is larger than a runtime-sized axis.
    pub fn try_topk_with<Ax, const K: usize>(
        &self,
        options: TopK,
    ) -> Result<TracedTopkOutput<T, S, Ax, D, K>>
    where
        S: HasAxis<Ax>,
    {
        let indices = self.value.topk_indices::<Ax, K>(options)?;
        Ok((
            self.gather_along(&indices, self.padded_axis::<Ax>()),
            indices,
        ))
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// The `k`-th smallest element of each lane along `Ax` (1-based) and its position (see
    /// [`Tensor::kthvalue`]); the gradient flows to that position.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::Var;
    /// let x = Var::new(Tensor::<f64, _, Cpu>::from_array([[3., 1., 2.], [0., 5., 4.]]));
    /// let (second, at) = x.trace().kthvalue::<Axis<1>>(2).unwrap();
    /// assert_eq!((second.value().to_array(), at.to_array()), ([2., 4.], [2, 2]));
    /// assert_eq!(second.sum_all().backward().get(&x).to_array(), [[0., 0., 1.], [0., 0., 1.]]);
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn kthvalue<Ax>(
        &self,
        k: usize,
    ) -> Result<(
        Traced<T, <S as ReduceShape<Ax>>::Output, D>,
        Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    )>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let indices = self.value.kthvalue_indices::<Ax>(k)?;
        Ok((self.pick_along::<Ax>(&indices), indices))
    }

    /// The lower median of each lane along `Ax` and its position, NaN (its first position) where the lane has
    /// one (see [`Tensor::median`]); the gradient flows to that position.
    #[track_caller]
    #[allow(clippy::type_complexity)]
    pub fn median<Ax>(
        &self,
    ) -> (
        Traced<T, <S as ReduceShape<Ax>>::Output, D>,
        Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    )
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        or_panic(self.try_median::<Ax>())
    }

    /// [`Self::median`], returning `Error::EmptyAxis` for an empty runtime-sized axis.
    #[allow(clippy::type_complexity)]
    pub fn try_median<Ax>(
        &self,
    ) -> Result<(
        Traced<T, <S as ReduceShape<Ax>>::Output, D>,
        Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    )>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let indices = self.value.median_indices::<Ax>()?;
        Ok((self.pick_along::<Ax>(&indices), indices))
    }

    /// The element at `indices` of each lane along `Ax` (the axis removed), traced through the gather's rule.
    fn pick_along<Ax>(
        &self,
        indices: &Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    ) -> Traced<T, <S as ReduceShape<Ax>>::Output, D>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        // The positions with the axis kept at size 1, as the gather takes them, then the axis dropped.
        let at = Tensor::<T, S, D>::with_axis_kept::<Ax>(indices);
        self.gather_along(&at, self.padded_axis::<Ax>())
            .reshape_with_shape(indices.shape())
    }
}
