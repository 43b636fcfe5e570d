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

use super::{device_ok, Tensor};
use crate::device::Device;
use crate::dtype::{FloatDType, WithDType};
use crate::ops::{self, ReduceOp};
use crate::shape::{Dims, ReduceShape, Shape, MAX_RANK};

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Runs `op` over the `reduced` axes; `Out` is the shape the types promise (reduced axes removed, or kept
    /// as size 1).
    fn reduce_with<Op: ReduceOp<T>, Out: Shape>(
        &self,
        op: Op,
        reduced: &[bool; MAX_RANK],
        keepdim: bool,
    ) -> Tensor<Op::Out, Out, D> {
        let dims = self.dims();
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
        if let Some(out) = self.reduce_axes_tiny(op, reduced, shape) {
            return out;
        }
        let storage = device_ok(D::reduce(op, self.buffer(), &self.layout(), reduced));
        Tensor::from_storage(shape, storage)
    }

    fn reduce_axes<Axes, Op: ReduceOp<T>>(&self, op: Op) -> Tensor<Op::Out, S::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        self.reduce_with(op, &S::REDUCED, false)
    }

    fn reduce_axes_keepdim<Axes, Op: ReduceOp<T>>(&self, op: Op) -> Tensor<Op::Out, S::KeepDim, D>
    where
        S: ReduceShape<Axes>,
    {
        self.reduce_with(op, &S::REDUCED, true)
    }

    #[inline]
    fn reduce_all<Op: ReduceOp<T>>(&self, op: Op) -> Tensor<Op::Out, (), D> {
        if let Some(out) = self.reduce_all_tiny(op) {
            return out;
        }
        self.reduce_all_kernel(op)
    }

    /// [`Self::reduce_all`] through the device's kernel (out of line, so the tiny path stays small in the caller).
    #[inline(never)]
    fn reduce_all_kernel<Op: ReduceOp<T>>(&self, op: Op) -> Tensor<Op::Out, (), D> {
        self.reduce_with(op, &[true; MAX_RANK], false)
    }
}

macro_rules! reduce_methods {
    ($bound:ident; $($(#[$m:meta])* $name:ident, $keep:ident, $all:ident => $op:expr, $out:ty;)*) => {
        impl<T: $bound, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                $(#[$m])*
                pub fn $name<Axes>(&self) -> Tensor<$out, <S as ReduceShape<Axes>>::Output, D>
                where
                    S: ReduceShape<Axes>,
                {
                    self.reduce_axes::<Axes, _>($op)
                }
                $(#[$m])*
                ///
                /// Keeps the reduced axes with size 1, so the result broadcasts back against the input.
                pub fn $keep<Axes>(&self) -> Tensor<$out, <S as ReduceShape<Axes>>::KeepDim, D>
                where
                    S: ReduceShape<Axes>,
                {
                    self.reduce_axes_keepdim::<Axes, _>($op)
                }
                $(#[$m])*
                ///
                /// Over every element, to a rank-0 tensor.
                #[inline]
                pub fn $all(&self) -> Tensor<$out, (), D> {
                    self.reduce_all($op)
                }
            )*
        }
    };
}

reduce_methods!(WithDType;
    /// Sum over `Axes` (integers wrap).
    sum, sum_keepdim, sum_all => ops::Sum, T;
    /// Product over `Axes` (integers wrap).
    prod, prod_keepdim, prod_all => ops::Prod, T;
    /// Maximum over `Axes` (NaN propagates; the lowest value for an empty axis).
    max, max_keepdim, max_all => ops::Max, T;
    /// Minimum over `Axes` (NaN propagates; the highest value for an empty axis).
    min, min_keepdim, min_all => ops::Min, T;
    /// Position of the maximum within `Axes`.
    argmax, argmax_keepdim, argmax_all => ops::ArgMax, u32;
    /// Position of the minimum within `Axes`.
    argmin, argmin_keepdim, argmin_all => ops::ArgMin, u32;
);

reduce_methods!(FloatDType;
    /// Arithmetic mean over `Axes`.
    mean, mean_keepdim, mean_all => ops::Mean, T;
    /// Unbiased variance over `Axes` (divides by n - 1, PyTorch's default).
    var, var_keepdim, var_all => ops::Var { correction: 1 }, T;
    /// Population variance over `Axes` (divides by n).
    var_population, var_population_keepdim, var_population_all => ops::Var { correction: 0 }, T;
    /// `ln(sum(exp(x)))` over `Axes`, computed with a running maximum (no overflow).
    logsumexp, logsumexp_keepdim, logsumexp_all => ops::LogSumExp, T;
    /// Euclidean norm `sqrt(sum(x^2))` over `Axes`.
    norm, norm_keepdim, norm_all => ops::Norm, T;
);
