//! Scans along a typed axis: `cumsum`, `cumprod`, `cummax`/`cummin` (values and `u32` indices) and
//! `logcumsumexp`, each a dense tensor of the input's shape.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., -1., 5.]]);
//! assert_eq!(x.cumsum::<Axis<1>>().to_array(), [[1., 3., 6.], [4., 3., 8.]]);
//! assert_eq!(x.cumprod::<Axis<0>>().to_array(), [[1., 2., 3.], [4., -2., 15.]]);
//! let (values, indices) = x.cummax::<Axis<1>>();
//! assert_eq!(values.to_array(), [[1., 2., 3.], [4., 4., 5.]]);
//! assert_eq!(indices.to_array(), [[0, 1, 2], [0, 0, 2]]);
//! ```

use super::{Cumulative, Scan};
use crate::dtype::{FloatDType, WithDType};
use crate::ops::Device;
use crate::shape::{HasAxis, Shape};
use crate::tensor::{call, written, Tensor};

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The scan `op` along runtime axis `axis` in `order`: the typed methods' body, and the gradients' reverse
    /// scans.
    #[inline(never)]
    pub(crate) fn scan_axis(&self, op: Scan, axis: usize, order: Cumulative) -> Self {
        let src = (self.buffer(), &self.layout());
        written!(
            Self::written_by,
            self.shape(),
            op.name(),
            call::scan::<T, D>(op, src, axis, order),
        )
    }

    /// The indices of the running maxima or minima along runtime axis `axis`.
    #[inline(never)]
    pub(crate) fn scan_index_axis(&self, op: Scan, axis: usize) -> Tensor<u32, S, D> {
        let src = (self.buffer(), &self.layout());
        written!(
            Tensor::<u32, S, D>::written_by,
            self.shape(),
            op.name(),
            call::scan_index::<T, D>(op, src, axis),
        )
    }

    /// Running sums along `Ax` (PyTorch's `cumsum`): element `i` is the sum of elements `0..=i` of its lane,
    /// accumulated in order in [`WithDType::Acc`] (f32 for f16/bf16, wrapping for integers, which keep their
    /// type: `u8` sums wrap at 256).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    /// assert_eq!(x.cumsum::<Axis<1>>().to_array(), [[1., 3., 6.], [4., 9., 15.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::reduction_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    /// let c = x.cumsum::<Axis<2>>(); // a rank-2 shape has no Axis<2>
    /// ```
    pub fn cumsum<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.scan_axis(Scan::Sum, S::INDEX, Cumulative::INCLUSIVE)
    }

    /// Running products along `Ax` (PyTorch's `cumprod`), accumulated as [`Self::cumsum`] is.
    pub fn cumprod<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.scan_axis(Scan::Prod, S::INDEX, Cumulative::INCLUSIVE)
    }

    /// [`Self::cumsum`] in the direction and with the element included or not as `order` says: reverse (the
    /// sums from each element to the end, in one pass) and exclusive (the sums before each element, starting at
    /// 0), as TensorFlow's `cumsum(x, exclusive, reverse)`.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::Cumulative;
    /// let x = Tensor::<f32, Rank2<2, 3>, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    /// let suffix = x.cumsum_with::<Axis<1>>(Cumulative::REVERSE);
    /// assert_eq!(suffix.to_array(), [[6., 5., 3.], [15., 11., 6.]]);
    /// let before = x.cumsum_with::<Axis<0>>(Cumulative::EXCLUSIVE);
    /// assert_eq!(before.to_array(), [[0., 0., 0.], [1., 2., 3.]]);
    /// ```
    pub fn cumsum_with<Ax>(&self, order: Cumulative) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.scan_axis(Scan::Sum, S::INDEX, order)
    }

    /// [`Self::cumprod`] in the direction and with the element included or not as `order` says (see
    /// [`Self::cumsum_with`]; an exclusive product starts at 1).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::Cumulative;
    /// let x = Tensor::<i64, Rank1<4>, Cpu>::from_array([2, 3, 4, 5]);
    /// assert_eq!(x.cumprod_with::<Axis<0>>(Cumulative::EXCLUSIVE).to_array(), [1, 2, 6, 24]);
    /// assert_eq!(x.cumprod_with::<Axis<0>>(Cumulative::REVERSE).to_array(), [120, 60, 20, 5]);
    /// ```
    pub fn cumprod_with<Ax>(&self, order: Cumulative) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.scan_axis(Scan::Prod, S::INDEX, order)
    }

    /// Running maxima along `Ax` and the index each came from (PyTorch's `cummax`): on ties the later index,
    /// and from a NaN on, NaN with the index of the latest NaN.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank1<5>, Cpu>::from_array([1., 3., 3., f32::NAN, 7.]);
    /// let (values, indices) = x.cummax::<Axis<0>>();
    /// assert_eq!(indices.to_array(), [0, 1, 2, 3, 3]);
    /// assert!(values.to_vec()[4].is_nan());
    /// ```
    pub fn cummax<Ax>(&self) -> (Self, Tensor<u32, S, D>)
    where
        S: HasAxis<Ax>,
    {
        (
            self.scan_axis(Scan::Max, S::INDEX, Cumulative::INCLUSIVE),
            self.scan_index_axis(Scan::Max, S::INDEX),
        )
    }

    /// Running minima along `Ax` and the index each came from (PyTorch's `cummin`; ties and NaN as in
    /// [`Self::cummax`]).
    pub fn cummin<Ax>(&self) -> (Self, Tensor<u32, S, D>)
    where
        S: HasAxis<Ax>,
    {
        (
            self.scan_axis(Scan::Min, S::INDEX, Cumulative::INCLUSIVE),
            self.scan_index_axis(Scan::Min, S::INDEX),
        )
    }
}

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `ln(sum(exp(x)))` of each prefix along `Ax` (PyTorch's `logcumsumexp`), computed with a running maximum, so
    /// it neither overflows nor loses small terms next to large ones.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f64, Rank1<3>, Cpu>::from_array([1000., 1000., 0.]);
    /// let y = x.logcumsumexp::<Axis<0>>().to_vec();
    /// assert_eq!(y[0], 1000.);
    /// assert!((y[1] - (1000. + 2f64.ln())).abs() < 1e-12);
    /// ```
    pub fn logcumsumexp<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.scan_axis(Scan::LogSumExp, S::INDEX, Cumulative::INCLUSIVE)
    }
}
