//! Reductions over typed axes: `x.sum::<Axis<1>>()`, several axes `x.sum::<(Axis<0>, Axis<2>)>()`, keep-dim
//! variants (`sum_keepdim`) that leave size-1 axes in place, and whole-tensor forms (`sum_all`) that give a
//! rank-0 tensor.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
//! let rows: Tensor<f32, Rank1<2>, Cpu> = x.sum::<Axis<1>>();
//! assert_eq!(rows.to_array(), [6., 15.]);
//! let cols: Tensor<f32, Rank2<1, 3>, Cpu> = x.max_keepdim::<Axis<0>>();
//! assert_eq!(cols.to_array(), [[4., 5., 6.]]);
//! assert_eq!(x.mean_all().to_scalar(), 3.5);
//! assert_eq!(x.argmax::<Axis<1>>().to_array(), [2, 2]);
//! ```
//!
//! Sums, means and norms of `f16`/`bf16` accumulate in `f32` (4096 `f16` ones sum to 4096). Integer sums and
//! products wrap in the element type. `argmax`/`argmin` give `u32` positions within the reduced axes (flattened
//! row-major when several axes are reduced), the first one on ties; NaN counts as the largest and the smallest.

use crate::dtype::{FloatDType, WithDType};
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::ops::{self, ReduceOp};
use crate::shape::size_check::{self, n, t};
use crate::shape::{Dims, ReduceShape, Shape, MAX_RANK};
use crate::tensor::tiny::{run, OpCall};
use crate::tensor::{call, or_panic, written, Tensor};
use core::marker::PhantomData;

/// The build-time check that an op with no value over zero elements (`max`, `argmax`, ...) does not reduce a
/// static axis of size 0; a runtime-sized one is checked when the op runs (`Error::EmptyAxis`).
struct NonEmpty<T, S, Op>(PhantomData<(T, S, Op)>);
impl<T: WithDType, S: Shape, Op: ReduceOp<T>> NonEmpty<T, S, Op> {
    const OK_ALL: () = Self::check(&[true; MAX_RANK]);

    /// Panics, naming the axis, when a `reduced` axis has static size 0 and the op needs elements.
    const fn check(reduced: &[bool; MAX_RANK]) {
        if !Op::NEEDS_ELEMENTS {
            return;
        }
        let mut ax = 0;
        while ax < S::RANK {
            if reduced[ax] && matches!(S::STATIC_DIMS[ax], Some(0)) {
                size_check::concat_panic(&[
                    &[
                        t("max, min, argmax and argmin need at least one element: axis "),
                        n(ax),
                        t(" of "),
                    ],
                    &size_check::shape(S::STATIC_DIMS, S::RANK),
                    &[t(" has size 0")],
                ]);
            }
            ax += 1;
        }
    }
}
struct NonEmptyAxes<T, S, Axes, Op>(PhantomData<(T, S, Axes, Op)>);
impl<T: WithDType, S: ReduceShape<Axes>, Axes, Op: ReduceOp<T>> NonEmptyAxes<T, S, Axes, Op> {
    const OK: () = NonEmpty::<T, S, Op>::check(&S::REDUCED);
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Runs `op` over the `reduced` axes; `Out` is the shape the types promise (reduced axes removed, or kept
    /// as size 1). `Error::EmptyAxis` when the op needs elements and a reduced axis has none.
    pub(crate) fn reduce_with<Op: ReduceOp<T>, Out: Shape>(
        &self,
        op: Op,
        reduced: &[bool; MAX_RANK],
        keepdim: bool,
    ) -> Result<Tensor<Op::Out, Out, D>> {
        let dims = self.dims();
        if Op::NEEDS_ELEMENTS
            && let Some(axis) = (0..dims.len()).find(|&ax| reduced[ax] && dims[ax] == 0)
        {
            return Err(Error::EmptyAxis { op: Op::NAME, axis });
        }
        let shape = reduced_shape(&dims, reduced, keepdim);
        run(ReduceAxes {
            op,
            x: self,
            reduced,
            shape,
        })
    }

    /// `op` over `Axes`, with no build-time check of empty axes: the op's caller checks (`median`, whose own
    /// check names it).
    pub(crate) fn reduce_axes<Axes, Op: ReduceOp<T>>(
        &self,
        op: Op,
    ) -> Result<Tensor<Op::Out, S::Output, D>>
    where
        S: ReduceShape<Axes>,
    {
        self.reduce_with(op, &S::REDUCED, false)
    }

    fn reduce_axes_keepdim<Axes, Op: ReduceOp<T>>(
        &self,
        op: Op,
    ) -> Result<Tensor<Op::Out, S::KeepDim, D>>
    where
        S: ReduceShape<Axes>,
    {
        self.reduce_with(op, &S::REDUCED, true)
    }

    #[inline]
    pub(crate) fn reduce_all<Op: ReduceOp<T>>(&self, op: Op) -> Result<Tensor<Op::Out, (), D>> {
        run(ReduceAll { op, x: self })
    }
}

/// The shape `Out` of a reduction of `dims` over the `reduced` axes: without them, or with size 1 when `keepdim`.
fn reduced_shape<Out: Shape>(dims: &Dims, reduced: &[bool; MAX_RANK], keepdim: bool) -> Out {
    let mut out = [0; MAX_RANK];
    let mut n = 0;
    for ax in 0..dims.len() {
        if !reduced[ax] || keepdim {
            out[n] = if reduced[ax] { 1 } else { dims[ax] };
            n += 1;
        }
    }
    let shape = Out::from_dims(&out[..n])
        .expect("typed-tensor internal error: reduced dims disagree with the reduced type");
    debug_assert_eq!(Dims::from_slice(&out[..n]), shape.dims());
    shape
}

/// [`Tensor::reduce_with`]'s call, once the result's shape is known.
struct ReduceAxes<'a, T: WithDType, S: Shape, D: Device, Op, Out> {
    op: Op,
    x: &'a Tensor<T, S, D>,
    reduced: &'a [bool; MAX_RANK],
    shape: Out,
}

/// The most outputs the tiny path of [`ReduceAxes`] holds accumulators for (a 4x4 f32 reduced over one axis has 4).
const TINY_REDUCE_OUTPUTS: usize = 16;

impl<T: WithDType, S: Shape, D: Device, Op: ReduceOp<T>, Out: Shape> OpCall
    for ReduceAxes<'_, T, S, D, Op, Out>
{
    type T = T;
    type S = S;
    type Output = Result<Tensor<Op::Out, Out, D>>;

    /// The kernel's own walk, with the accumulators on the stack, so the result has the same bits.
    #[inline]
    fn tiny(&mut self) -> Option<Self::Output> {
        let a = self.x.tiny_elements()?;
        let m = self.shape.dims().iter().product();
        if m > TINY_REDUCE_OUTPUTS {
            return None;
        }
        let mut out = Tensor::<Op::Out, Out, D>::host_output(self.shape, m)?;
        crate::ops::reduce::host::reduce_small::<T, Op, TINY_REDUCE_OUTPUTS>(
            self.op,
            a,
            &self.x.dims(),
            self.reduced,
            &mut out.host_elements_mut()?[..m],
        );
        Some(Ok(out))
    }

    #[inline(never)]
    fn kernel(self) -> Self::Output {
        let src = (self.x.buffer(), &self.x.layout());
        written!(
            Tensor::try_written_by,
            self.shape,
            Op::NAME,
            call::reduce::<T, D, _>(self.op, src, self.reduced)
        )
    }
}

/// [`Tensor::reduce_all`]'s call.
struct ReduceAll<'a, T: WithDType, S: Shape, D: Device, Op> {
    op: Op,
    x: &'a Tensor<T, S, D>,
}

impl<T: WithDType, S: Shape, D: Device, Op: ReduceOp<T>> OpCall for ReduceAll<'_, T, S, D, Op> {
    type T = T;
    type S = S;
    type Output = Result<Tensor<Op::Out, (), D>>;

    /// The kernel folds a dense view as one run from the op's initial state, as here, so the result has the same
    /// bits.
    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let a = self.x.tiny_elements()?;
        let mut out = Tensor::<Op::Out, (), D>::host_output((), 1)?;
        let op = self.op;
        out.host_elements_mut()?[0] = op.finish(op.fold_slice(op.init(), a, 0), a.len());
        Some(Ok(out))
    }

    #[inline(never)]
    fn kernel(self) -> Self::Output {
        self.x.reduce_with(self.op, &[true; MAX_RANK], false)
    }
}

// Each public form names the build-time check itself, so that a failing one is reported at the user's call.
macro_rules! reduce_methods {
    ($bound:ident; $($(#[$m:meta])* $name:ident, $keep:ident, $all:ident => $op:expr, $opty:ty, $out:ty;)*) => {
        impl<T: $bound, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<Axes>(&self) -> Tensor<$out, <S as ReduceShape<Axes>>::Output, D>
                where
                    S: ReduceShape<Axes>,
                {
                    let () = NonEmptyAxes::<T, S, Axes, $opty>::OK;
                    or_panic(self.reduce_axes::<Axes, _>($op))
                }
                $(#[$m])*
                ///
                /// Keeps the reduced axes with size 1, so the result broadcasts back against the input.
                #[track_caller]
                pub fn $keep<Axes>(&self) -> Tensor<$out, <S as ReduceShape<Axes>>::KeepDim, D>
                where
                    S: ReduceShape<Axes>,
                {
                    let () = NonEmptyAxes::<T, S, Axes, $opty>::OK;
                    or_panic(self.reduce_axes_keepdim::<Axes, _>($op))
                }
                $(#[$m])*
                ///
                /// Over every element, to a rank-0 tensor.
                #[inline]
                #[track_caller]
                pub fn $all(&self) -> Tensor<$out, (), D> {
                    let () = NonEmpty::<T, S, $opty>::OK_ALL;
                    or_panic(self.reduce_all($op))
                }
            )*
        }
    };
}

/// The `try_` forms of the reductions that have no value over zero elements: `Error::EmptyAxis` when a reduced
/// runtime-sized axis is empty (a static empty axis fails the build), and device errors.
macro_rules! try_reduce_methods {
    ($($name:ident, $try:ident, $try_keep:ident, $try_all:ident => $op:expr, $opty:ty, $out:ty;)*) => {
        impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                #[doc = concat!("[`Self::", stringify!($name), "`], returning `Error::EmptyAxis` for an empty runtime-sized axis (and device errors).")]
                pub fn $try<Axes>(&self) -> Result<Tensor<$out, <S as ReduceShape<Axes>>::Output, D>>
                where
                    S: ReduceShape<Axes>,
                {
                    let () = NonEmptyAxes::<T, S, Axes, $opty>::OK;
                    self.reduce_axes::<Axes, _>($op)
                }
                #[doc = concat!("[`Self::", stringify!($try), "`] keeping the reduced axes with size 1.")]
                pub fn $try_keep<Axes>(
                    &self,
                ) -> Result<Tensor<$out, <S as ReduceShape<Axes>>::KeepDim, D>>
                where
                    S: ReduceShape<Axes>,
                {
                    let () = NonEmptyAxes::<T, S, Axes, $opty>::OK;
                    self.reduce_axes_keepdim::<Axes, _>($op)
                }
                #[doc = concat!("[`Self::", stringify!($try), "`] over every element, to a rank-0 tensor.")]
                pub fn $try_all(&self) -> Result<Tensor<$out, (), D>> {
                    let () = NonEmpty::<T, S, $opty>::OK_ALL;
                    self.reduce_all($op)
                }
            )*
        }
    };
}

reduce_methods!(WithDType;
    /// Sum over `Axes` (integers wrap in the element type; 0 over an empty axis).
    sum, sum_keepdim, sum_all => ops::Sum, ops::Sum, T;
    /// Product over `Axes` (integers wrap; 1 over an empty axis).
    prod, prod_keepdim, prod_all => ops::Prod, ops::Prod, T;
    /// Maximum over `Axes` (NaN propagates). An empty axis has no maximum: a static one fails the build, a
    /// runtime-sized one panics (see `try_max`).
    max, max_keepdim, max_all => ops::Max, ops::Max, T;
    /// Minimum over `Axes` (NaN propagates). An empty axis has no minimum, as for `max`.
    min, min_keepdim, min_all => ops::Min, ops::Min, T;
    /// Position of the maximum within `Axes` (the first on ties; the first NaN if any). An empty axis has
    /// none, as for `max`.
    argmax, argmax_keepdim, argmax_all => ops::ArgMax, ops::ArgMax, u32;
    /// Position of the minimum within `Axes` (the first on ties; the first NaN if any). An empty axis has
    /// none, as for `max`.
    argmin, argmin_keepdim, argmin_all => ops::ArgMin, ops::ArgMin, u32;
    /// Position of the maximum within `Axes`, the last on ties (the last NaN if any): where a tie should go
    /// to the later element (NumPy's `len - 1 - argmax(flip(x))`, in one pass). An empty axis has none.
    argmax_last, argmax_last_keepdim, argmax_last_all => ops::ArgMaxLast, ops::ArgMaxLast, u32;
    /// Position of the minimum within `Axes`, the last on ties (the last NaN if any). An empty axis has none.
    argmin_last, argmin_last_keepdim, argmin_last_all => ops::ArgMinLast, ops::ArgMinLast, u32;
);

try_reduce_methods!(
    max, try_max, try_max_keepdim, try_max_all => ops::Max, ops::Max, T;
    min, try_min, try_min_keepdim, try_min_all => ops::Min, ops::Min, T;
    argmax, try_argmax, try_argmax_keepdim, try_argmax_all => ops::ArgMax, ops::ArgMax, u32;
    argmin, try_argmin, try_argmin_keepdim, try_argmin_all => ops::ArgMin, ops::ArgMin, u32;
    argmax_last, try_argmax_last, try_argmax_last_keepdim, try_argmax_last_all
        => ops::ArgMaxLast, ops::ArgMaxLast, u32;
    argmin_last, try_argmin_last, try_argmin_last_keepdim, try_argmin_last_all
        => ops::ArgMinLast, ops::ArgMinLast, u32;
);

reduce_methods!(FloatDType;
    /// Arithmetic mean over `Axes` (NaN over an empty axis: 0 / 0).
    mean, mean_keepdim, mean_all => ops::Mean, ops::Mean, T;
    /// Unbiased variance over `Axes` (divides by n - 1, PyTorch's default; NaN for fewer than 2 elements).
    var, var_keepdim, var_all => ops::Var { correction: 1 }, ops::Var, T;
    /// Population variance over `Axes` (divides by n; NaN over an empty axis).
    var_population, var_population_keepdim, var_population_all => ops::Var { correction: 0 }, ops::Var, T;
    /// `ln(sum(exp(x)))` over `Axes`, computed with a running maximum (no overflow; -inf over an empty axis).
    logsumexp, logsumexp_keepdim, logsumexp_all => ops::LogSumExp, ops::LogSumExp, T;
    /// Euclidean norm `sqrt(sum(x^2))` over `Axes` (0 over an empty axis).
    norm, norm_keepdim, norm_all => ops::Norm, ops::Norm, T;
);

/// Standard deviations: the square root of the variance (two launches on `Cuda`; the gradient comes from `var`'s
/// and `sqrt`'s).
macro_rules! std_methods {
    ($($(#[$m:meta])* $name:ident, $keep:ident, $all:ident => $var:ident, $var_keep:ident, $var_all:ident;)*) => {
        impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<Axes>(&self) -> Tensor<T, <S as ReduceShape<Axes>>::Output, D>
                where
                    S: ReduceShape<Axes>,
                {
                    self.$var::<Axes>().sqrt()
                }
                $(#[$m])*
                ///
                /// Keeps the reduced axes with size 1.
                #[track_caller]
                pub fn $keep<Axes>(&self) -> Tensor<T, <S as ReduceShape<Axes>>::KeepDim, D>
                where
                    S: ReduceShape<Axes>,
                {
                    self.$var_keep::<Axes>().sqrt()
                }
                $(#[$m])*
                ///
                /// Over every element, to a rank-0 tensor.
                pub fn $all(&self) -> Tensor<T, (), D> {
                    self.$var_all().sqrt()
                }
            )*
        }
    };
}
std_methods!(
    /// Unbiased standard deviation over `Axes` (`sqrt` of [`Self::var`], PyTorch's default `std`; NaN for fewer
    /// than 2 elements).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f64, _, Cpu>::from_array([[1., 3.], [2., 2.]]);
    /// assert_eq!(x.std::<Axis<1>>().to_array(), [2f64.sqrt(), 0.]);
    /// assert_eq!(x.std_population::<Axis<1>>().to_array(), [1., 0.]);
    /// ```
    std, std_keepdim, std_all => var, var_keepdim, var_all;
    /// Population standard deviation over `Axes` (`sqrt` of [`Self::var_population`]).
    std_population, std_population_keepdim, std_population_all =>
        var_population, var_population_keepdim, var_population_all;
);

/// Truth reductions, for every element type (non-zero is true, as in PyTorch): `count_nonzero` sums an `i64` mask
/// (PyTorch's count type), `any` and `all` take the maximum of a `u8` mask, so they hold one byte per element and
/// give bytes. An empty axis gives `any` false, `all` true and a count of 0.
impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The number of non-zero elements over `Axes` (NaN counts as non-zero).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[0., 2., 0.], [1., -1., 3.]]);
    /// assert_eq!(x.count_nonzero::<Axis<1>>().to_array(), [1, 3]);
    /// assert_eq!(x.any::<Axis<1>>().to_array(), [1, 1]);
    /// assert_eq!(x.all::<Axis<1>>().to_array(), [0, 1]);
    /// assert_eq!(x.count_nonzero_all().to_scalar(), 4);
    /// ```
    #[track_caller]
    pub fn count_nonzero<Axes>(&self) -> Tensor<i64, <S as ReduceShape<Axes>>::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        self.compare_scalar(ops::CmpOp::Ne, T::ZERO)
            .to_dtype::<i64>()
            .sum::<Axes>()
    }

    /// [`Self::count_nonzero`] over every element, to a rank-0 tensor.
    pub fn count_nonzero_all(&self) -> Tensor<i64, (), D> {
        self.compare_scalar(ops::CmpOp::Ne, T::ZERO)
            .to_dtype::<i64>()
            .sum_all()
    }

    /// `1` where some element over `Axes` is non-zero.
    #[track_caller]
    pub fn any<Axes>(&self) -> Tensor<u8, <S as ReduceShape<Axes>>::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        mask_any(&self.compare_scalar(ops::CmpOp::Ne, T::ZERO), &S::REDUCED)
    }

    /// [`Self::any`] over every element.
    pub fn any_all(&self) -> Tensor<u8, (), D> {
        mask_any(
            &self.compare_scalar(ops::CmpOp::Ne, T::ZERO),
            &[true; MAX_RANK],
        )
    }

    /// `1` where every element over `Axes` is non-zero.
    #[track_caller]
    pub fn all<Axes>(&self) -> Tensor<u8, <S as ReduceShape<Axes>>::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        mask_any(&self.compare_scalar(ops::CmpOp::Eq, T::ZERO), &S::REDUCED).logical_not()
    }

    /// [`Self::all`] over every element.
    pub fn all_all(&self) -> Tensor<u8, (), D> {
        mask_any(
            &self.compare_scalar(ops::CmpOp::Eq, T::ZERO),
            &[true; MAX_RANK],
        )
        .logical_not()
    }
}

/// `1` where the `u8` mask holds a 1 over the `reduced` axes: its maximum, and 0 (false) where a reduced axis is
/// empty, which has no maximum. `Out` is the shape the types promise, without the reduced axes.
#[track_caller]
fn mask_any<S: Shape, Out: Shape, D: Device>(
    mask: &Tensor<u8, S, D>,
    reduced: &[bool; MAX_RANK],
) -> Tensor<u8, Out, D> {
    match mask.reduce_with::<_, Out>(ops::Max, reduced, false) {
        Err(Error::EmptyAxis { .. }) => {
            Tensor::zeros_with_shape(reduced_shape(&mask.dims(), reduced, false))
        }
        result => or_panic(result),
    }
}
