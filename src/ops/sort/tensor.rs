//! Sorting along a typed axis: `argsort`, `sort` (values and positions), `topk` (`K` in the type) and `kthvalue`.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<f32, _, Cpu>::from_array([[3., 1., 2.], [0., 5., 5.]]);
//! let (values, indices) = x.sort::<Axis<1>>(false);
//! assert_eq!(values.to_array(), [[1., 2., 3.], [0., 5., 5.]]);
//! assert_eq!(indices.to_array(), [[1, 2, 0], [0, 1, 2]]); // ties keep their order
//! let (top, at) = x.topk::<Axis<1>, 2>(true);
//! assert_eq!(top.to_array(), [[3., 2.], [5., 5.]]);
//! assert_eq!(at.to_array(), [[0, 2], [1, 2]]);
//! ```

use super::TopK;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{Const, Dim, HasAxis, ReduceShape, Shape};
use crate::tensor::{call, device_ok, or_panic, written, Tensor};
use core::marker::PhantomData;

/// The build-time check of `topk`: `K` fits in a static axis (a runtime-sized one is checked when the op runs).
struct TopkFits<S, Ax, const K: usize>(PhantomData<(S, Ax)>);
impl<S: HasAxis<Ax>, Ax, const K: usize> TopkFits<S, Ax, K> {
    const OK: () = if let Some(size) = <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE
        && K > size
    {
        size_check::fail(
            "topk",
            &[
                t("K = "),
                n(K),
                t(" is larger than axis "),
                n(<S as HasAxis<Ax>>::INDEX),
                t(", of size "),
                n(size),
            ],
        );
    };
}

/// The build-time check of `median`: a static axis is not empty (a runtime-sized one is checked when it runs).
struct MedianOfSome<S, Ax>(PhantomData<(S, Ax)>);
impl<S: HasAxis<Ax>, Ax> MedianOfSome<S, Ax> {
    const OK: () = if let Some(0) = <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE {
        size_check::fail(
            "median",
            &[
                t("axis "),
                n(<S as HasAxis<Ax>>::INDEX),
                t(" has size 0, and an empty lane has no median"),
            ],
        );
    };
}

/// What `topk` gives: the `K` values along `Ax` and their `u32` positions.
pub type TopkOutput<T, S, Ax, D, const K: usize> = (
    Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<K>>, D>,
    Tensor<u32, <S as HasAxis<Ax>>::Replaced<Const<K>>, D>,
);

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The sorted positions along runtime axis `axis` (the typed methods' body).
    #[inline(never)]
    pub(crate) fn argsort_axis(&self, axis: usize, descending: bool) -> Tensor<u32, S, D> {
        let src = (self.buffer(), &self.layout());
        written!(
            Tensor::<u32, S, D>::written_by,
            self.shape(),
            "argsort",
            call::argsort::<T, D>(src, axis, descending),
        )
    }

    /// The positions along `Ax` that sort each lane (PyTorch's `argsort` with `stable=True`): ascending with NaN
    /// last, or descending with NaN first; ties keep their input order.
    pub fn argsort<Ax>(&self, descending: bool) -> Tensor<u32, S, D>
    where
        S: HasAxis<Ax>,
    {
        self.argsort_axis(S::INDEX, descending)
    }

    /// Each lane along `Ax` sorted, and the positions the values came from (see [`Self::argsort`]).
    pub fn sort<Ax>(&self, descending: bool) -> (Self, Tensor<u32, S, D>)
    where
        S: HasAxis<Ax>,
    {
        let indices = self.argsort_axis(S::INDEX, descending);
        (self.gather_axis(&indices, S::INDEX), indices)
    }

    /// The `K` largest elements of each lane along `Ax` (the smallest when `largest` is false), sorted, with their
    /// positions (PyTorch's `topk` with `sorted=True`; ties go to the lower position, NaN counts as the largest).
    /// `K` is in the type: the result's axis has size `K`, and a `K` past a static axis fails the build; past a
    /// runtime-sized one it panics (see [`Self::try_topk`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[3., 1., 4., 1., 5.]]);
    /// let (values, indices) = x.topk::<Axis<1>, 2>(true);
    /// assert_eq!((values.to_array(), indices.to_array()), ([[5., 4.]], [[4, 2]]));
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::reduction_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<1, 5>, Cpu>::zeros();
    /// let (values, indices) = x.topk::<Axis<1>, 6>(true); // 6 of 5
    /// ```
    #[track_caller]
    pub fn topk<Ax, const K: usize>(&self, largest: bool) -> TopkOutput<T, S, Ax, D, K>
    where
        S: HasAxis<Ax>,
    {
        let () = TopkFits::<S, Ax, K>::OK;
        or_panic(self.try_topk::<Ax, K>(largest))
    }

    /// [`Self::topk`], returning `Error::AxisTooShort` when `K` is larger than a runtime-sized axis.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, (usize,), Cpu>::from_slice_with_shape((2,), &[1., 2.]).unwrap();
    /// let err = x.try_topk::<Axis<0>, 3>(true).unwrap_err();
    /// assert_eq!(err.to_string(), "topk: takes 3 elements along axis 0, which has 2");
    /// ```
    pub fn try_topk<Ax, const K: usize>(&self, largest: bool) -> Result<TopkOutput<T, S, Ax, D, K>>
    where
        S: HasAxis<Ax>,
    {
        self.try_topk_with::<Ax, K>(TopK {
            largest,
            sorted: true,
        })
    }

    /// [`Self::topk`] with PyTorch's two options: `largest` (or the smallest) and `sorted` (by value, the
    /// default; otherwise in the order they stand along the axis, where PyTorch leaves the order unspecified).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::TopK;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[3., 1., 4., 1., 5.]]);
    /// let in_place = TopK { sorted: false, ..TopK::default() };
    /// let (values, indices) = x.topk_with::<Axis<1>, 3>(in_place);
    /// assert_eq!((values.to_array(), indices.to_array()), ([[3., 4., 5.]], [[0, 2, 4]]));
    /// ```
    #[track_caller]
    pub fn topk_with<Ax, const K: usize>(&self, options: TopK) -> TopkOutput<T, S, Ax, D, K>
    where
        S: HasAxis<Ax>,
    {
        let () = TopkFits::<S, Ax, K>::OK;
        or_panic(self.try_topk_with::<Ax, K>(options))
    }

    /// [`Self::topk_with`], returning `Error::AxisTooShort` when `K` is larger than a runtime-sized axis.
    pub fn try_topk_with<Ax, const K: usize>(
        &self,
        options: TopK,
    ) -> Result<TopkOutput<T, S, Ax, D, K>>
    where
        S: HasAxis<Ax>,
    {
        let indices = self.topk_indices::<Ax, K>(options)?;
        Ok((self.gather_axis(&indices, S::INDEX), indices))
    }

    /// The positions [`Self::try_topk`] picks: the forward's sort, which the traced form shares and then gathers
    /// through its own rule.
    pub(crate) fn topk_indices<Ax, const K: usize>(
        &self,
        TopK { largest, sorted }: TopK,
    ) -> Result<Tensor<u32, <S as HasAxis<Ax>>::Replaced<Const<K>>, D>>
    where
        S: HasAxis<Ax>,
    {
        let () = TopkFits::<S, Ax, K>::OK;
        let (axis, size) = (S::INDEX, self.dims()[S::INDEX]);
        if K > size {
            return Err(Error::AxisTooShort {
                op: "topk",
                axis,
                needed: K,
                size,
            });
        }
        let order = self.argsort_axis(axis, largest);
        // The first K positions of each lane (a view, then dense).
        let first: Tensor<u32, <S as HasAxis<Ax>>::Replaced<Const<K>>, D> =
            order.view_as(order.layout().narrow("topk", axis, 0, K)?);
        if sorted {
            return Ok(first.contiguous());
        }
        // In the input's order: the picked positions in increasing order along each lane.
        let increasing = first.argsort_axis(axis, false);
        Ok(first.gather_axis(&increasing, axis))
    }

    /// The `k`-th smallest element of each lane along `Ax` (1-based, PyTorch's `kthvalue`; NaN counts as the
    /// largest) and its position; the axis is removed. `k` outside `1..=n` is an error.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[3., 1., 2.], [0., 9., 5.]]);
    /// let (values, indices) = x.kthvalue::<Axis<1>>(2).unwrap();
    /// assert_eq!(values.to_array(), [2., 5.]);
    /// assert_eq!(indices.to_array(), [2, 2]);
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn kthvalue<Ax>(
        &self,
        k: usize,
    ) -> Result<(
        Tensor<T, <S as ReduceShape<Ax>>::Output, D>,
        Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    )>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let indices = self.kthvalue_indices::<Ax>(k)?;
        Ok((self.take_along::<Ax>(&indices), indices))
    }

    /// The position of the `k`-th smallest element of each lane along `Ax`, the axis removed ([`Self::kthvalue`]
    /// without gathering the values: the traced form gathers them through its own rule).
    pub(crate) fn kthvalue_indices<Ax>(
        &self,
        k: usize,
    ) -> Result<Tensor<u32, <S as ReduceShape<Ax>>::Output, D>>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let axis = <S as HasAxis<Ax>>::INDEX;
        let n = self.dims()[axis];
        if k == 0 || k > n {
            return Err(Error::IndexOutOfRange {
                op: "kthvalue",
                axis,
                index: k as i128,
                size: n,
            });
        }
        let order = self.argsort_axis(axis, false);
        // The k-th position of each lane, the axis dropped: a view.
        Ok(order.view_as(
            order
                .layout()
                .narrow("kthvalue", axis, k - 1, 1)?
                .select("kthvalue", axis, 0)?,
        ))
    }

    /// The element at `indices` of each lane along `Ax`, the axis removed.
    pub(crate) fn take_along<Ax>(
        &self,
        indices: &Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    ) -> Tensor<T, <S as ReduceShape<Ax>>::Output, D>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let axis = <S as HasAxis<Ax>>::INDEX;
        let values = self.gather_axis(&Self::with_axis_kept::<Ax>(indices), axis);
        values.view_as(device_ok(values.layout().select("kthvalue", axis, 0)))
    }

    /// `indices` (one position per lane along `Ax`, the axis removed) with the axis back at size 1, as the gathers
    /// take them (a view): what the values of kthvalue and median, plain and traced, are gathered by.
    pub(crate) fn with_axis_kept<Ax>(
        indices: &Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    ) -> Tensor<u32, <S as HasAxis<Ax>>::Replaced<Const<1>>, D>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        indices.view_as(indices.layout().unsqueeze(<S as HasAxis<Ax>>::INDEX))
    }

    /// The median of each lane along `Ax` and its position, the axis removed (PyTorch's `median(dim)`): for an
    /// even count the lower of the two middle elements; a lane holding NaN gives NaN, at its first NaN's position.
    /// An empty static axis fails the build; an empty runtime-sized one panics (see [`Self::try_median`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[3., 1., 4., 2.], [1., f32::NAN, 0., f32::NAN]]);
    /// let (values, indices) = x.median::<Axis<1>>();
    /// assert_eq!(values.to_vec()[0], 2.);
    /// assert!(values.to_vec()[1].is_nan());
    /// assert_eq!(indices.to_array(), [3, 1]);
    /// ```
    #[track_caller]
    #[allow(clippy::type_complexity)]
    pub fn median<Ax>(
        &self,
    ) -> (
        Tensor<T, <S as ReduceShape<Ax>>::Output, D>,
        Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    )
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let () = MedianOfSome::<S, Ax>::OK;
        or_panic(self.try_median::<Ax>())
    }

    /// [`Self::median`], returning `Error::EmptyAxis` for an empty runtime-sized axis.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, (Const<2>, usize), Cpu>::zeros_with_shape((Const, 0));
    /// let err = x.try_median::<Axis<1>>().unwrap_err();
    /// assert_eq!(err.to_string(), "median: axis 1 has size 0, and the op has no value over zero elements");
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn try_median<Ax>(
        &self,
    ) -> Result<(
        Tensor<T, <S as ReduceShape<Ax>>::Output, D>,
        Tensor<u32, <S as ReduceShape<Ax>>::Output, D>,
    )>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let indices = self.median_indices::<Ax>()?;
        Ok((self.take_along::<Ax>(&indices), indices))
    }

    /// The position of each lane's median along `Ax` ([`Self::try_median`]'s indices): the lower middle element,
    /// or the lane's first NaN (whose value, gathered, is the NaN the median is).
    pub(crate) fn median_indices<Ax>(
        &self,
    ) -> Result<Tensor<u32, <S as ReduceShape<Ax>>::Output, D>>
    where
        S: HasAxis<Ax> + ReduceShape<Ax>,
    {
        let () = MedianOfSome::<S, Ax>::OK;
        let axis = <S as HasAxis<Ax>>::INDEX;
        let n = self.dims()[axis];
        if n == 0 {
            return Err(Error::EmptyAxis { op: "median", axis });
        }
        let indices = self.kthvalue_indices::<Ax>(n.div_ceil(2))?;
        if !T::DTYPE.is_float() {
            return Ok(indices);
        }
        // NaN wins: where a lane has one, its first (argmax of the NaN mask takes the first 1).
        let nan = self.compare_view(crate::ops::CmpOp::Ne, (self.buffer(), &self.layout()));
        let first_nan = nan.reduce_axes::<Ax, _>(crate::ops::ArgMax)?;
        Ok(nan.any::<Ax>().where_cond(&first_nan, &indices))
    }
}
