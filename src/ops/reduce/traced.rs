//! Reductions: a sum's gradient is spread back over the reduced axes (a stride-0 view, no copy); a mean's is
//! scaled by the count; max and min split it evenly among the positions holding the result (PyTorch's `amax` /
//! `amin` and JAX do the same; a lane whose result is NaN sends it to its NaN positions), so the gradient's sum
//! is the output's whatever the ties; variances and norms use their closed forms; `prod`'s is the product of the
//! other elements of the lane, with care at zeros.

use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::ops::{self, CmpOp};
use crate::shape::{ReduceShape, Shape, MAX_RANK};
use crate::tensor::{padded_axes, Grad, Tensor};

/// How a reduction's gradient reaches its input.
#[derive(Clone, Copy)]
enum Route {
    /// Every element gets the output's gradient times `scale`.
    Spread { scale: f64 },
    /// Elements equal to the output get its gradient.
    Extremum,
    /// A variance with `count - ddof` in the denominator: `2 (x - mean) / (count - ddof)`.
    Variance { ddof: usize },
    /// The 2-norm: `x / norm` (0 where the norm is 0).
    Norm,
    /// The product: the product of the lane's other elements.
    Product,
    /// `logsumexp`: the softmax over the lane.
    LogSumExp,
}

/// What a reduction's rule keeps: the input's slot, the input and the result (padded), the reduced axes (of the
/// padded input) and the route.
type ReductionCaptured<T, D> = (Slot, [Grad<T, D>; 2], [bool; MAX_RANK], Route);

/// The backward rule of every reduction, in the padded form: compiled once per element type and device.
fn reduction_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, [x, out], reduced, route): ReductionCaptured<T, D>,
    store: &mut Gradients,
) {
    let spread = g.spread_over(x.shape(), &reduced);
    let grad = match route {
        Route::Spread { scale: 1.0 } => spread,
        Route::Spread { scale } => spread.affine(scale, 0.0),
        Route::Extremum => {
            // 1 at each position holding the lane's extremum: equal to it, or NaN where the result is NaN
            // (NaN propagates, so a lane's result is NaN exactly when the lane holds one, and equality then
            // marks nothing). Disjoint, so the sum is the union.
            let at = x
                .mask_same(CmpOp::Eq, &out.spread_over(x.shape(), &reduced))
                .zip_same(ops::Add, &x.mask_same(CmpOp::Ne, &x));
            // The gradient split evenly among the lane's `ties` positions (each lane has at least one).
            let ties = at.sum_spread(&reduced);
            spread.zip_same(ops::Mul, &at).zip_same(ops::Div, &ties)
        }
        Route::Variance { ddof } => {
            let n = (0..MAX_RANK)
                .filter(|&ax| reduced[ax])
                .map(|ax| x.dims()[ax])
                .product::<usize>();
            let mean = x.sum_spread(&reduced).affine(1.0 / n as f64, 0.0);
            let centred = x.zip_same(ops::Sub, &mean);
            let scale = 2.0 / (n as f64 - ddof as f64);
            spread.zip_same(ops::Mul, &centred.affine(scale, 0.0))
        }
        Route::Norm => {
            let norm = out.spread_over(x.shape(), &reduced);
            // x / norm, with the 0/0 of an all-zero lane replaced by 0 (a subgradient).
            let safe = norm.zip_same(ops::Add, &norm.mask_scalar(CmpOp::Eq, T::ZERO));
            spread.zip_same(ops::Mul, &x.zip_same(ops::Div, &safe))
        }
        Route::Product => {
            // `prod / x` without zeros; at a lone zero of its lane, the product of the others; 0 in a lane with
            // two zeros or more.
            let zero = x.mask_scalar(CmpOp::Eq, T::ZERO);
            let zeros_in_lane = zero.sum_spread(&reduced);
            let x_safe = x.zip_same(ops::Add, &zero); // zeros replaced by ones
            let others = x_safe.reduce_spread(ops::Prod, &reduced); // product of the non-zero elements
            let none = zeros_in_lane.mask_scalar(CmpOp::Eq, T::ZERO);
            let one = zeros_in_lane.mask_scalar(CmpOp::Eq, T::ONE);
            let weight = none
                .zip_same(ops::Mul, &others.zip_same(ops::Div, &x_safe))
                .zip_same(
                    ops::Add,
                    &one.zip_same(ops::Mul, &zero).zip_same(ops::Mul, &others),
                );
            spread.zip_same(ops::Mul, &weight)
        }
        Route::LogSumExp => {
            let shift = out.spread_over(x.shape(), &reduced);
            spread.zip_same(ops::Mul, &x.zip_same(ops::Sub, &shift).exp())
        }
    };
    slot.give_padded(store, grad);
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Records a reduction over `reduced` whose result is `value`.
    fn reduction<S2: Shape>(
        &self,
        value: Tensor<T, S2, D>,
        reduced: [bool; MAX_RANK],
        route: Route,
    ) -> Traced<T, S2, D> {
        let saved = [self.value.padded(), value.padded()];
        let captured = (self.slot(), saved, padded_axes(&reduced, S::RANK), route);
        record_with(value, &[&self.node], captured, reduction_rule::<T, D>)
    }

    /// The number of elements over the `reduced` axes.
    fn count(&self, reduced: &[bool; MAX_RANK]) -> usize {
        let dims = self.value.dims();
        (0..dims.len())
            .filter(|&ax| reduced[ax])
            .map(|ax| dims[ax])
            .product()
    }
}

macro_rules! traced_reductions {
    ($($(#[$m:meta])* $name:ident, $keep:ident, $all:ident => $route:expr;)*) => {
        impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::Output, D>
                where
                    S: ReduceShape<Axes>,
                {
                    let reduced = S::REDUCED;
                    let route = $route(self.count(&reduced));
                    self.reduction(self.value.$name::<Axes>(), reduced, route)
                }

                #[doc = concat!("[`Self::", stringify!($name), "`] keeping the reduced axes as size 1.")]
                #[track_caller]
                pub fn $keep<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::KeepDim, D>
                where
                    S: ReduceShape<Axes>,
                {
                    let reduced = S::REDUCED;
                    let route = $route(self.count(&reduced));
                    self.reduction(self.value.$keep::<Axes>(), reduced, route)
                }

                #[doc = concat!("[`Self::", stringify!($name), "`] over every element (a rank-0 result).")]
                #[track_caller]
                pub fn $all(&self) -> Traced<T, (), D> {
                    let reduced = [true; MAX_RANK];
                    let route = $route(self.count(&reduced));
                    self.reduction(self.value.$all(), reduced, route)
                }
            )*
        }
    };
}
traced_reductions! {
    /// Sum over the axes `Axes`.
    sum, sum_keepdim, sum_all => |_| Route::Spread { scale: 1.0 };
    /// Mean over the axes `Axes`.
    mean, mean_keepdim, mean_all => |n: usize| Route::Spread { scale: 1.0 / n as f64 };
    /// Maximum over the axes `Axes`; the gradient is split evenly among the positions holding the maximum.
    max, max_keepdim, max_all => |_| Route::Extremum;
    /// Minimum over the axes `Axes`; the gradient is split evenly among the positions holding the minimum.
    min, min_keepdim, min_all => |_| Route::Extremum;
    /// Unbiased variance over the axes `Axes` (`count - 1` in the denominator).
    var, var_keepdim, var_all => |_| Route::Variance { ddof: 1 };
    /// Population variance over the axes `Axes`.
    var_population, var_population_keepdim, var_population_all => |_| Route::Variance { ddof: 0 };
    /// 2-norm over the axes `Axes`; the gradient of an all-zero lane is 0.
    norm, norm_keepdim, norm_all => |_| Route::Norm;
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Product over the axes `Axes`. The gradient is the product of the other elements of the lane: `prod / x`
    /// without zeros, `prod of the others` at a lone zero, and 0 everywhere in a lane with two zeros or more.
    pub fn prod<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        self.reduction(self.value.prod::<Axes>(), S::REDUCED, Route::Product)
    }

    /// `ln(sum(exp(x)))` over the axes `Axes` (max-shifted); gradient `g softmax(x)` over those axes.
    pub fn logsumexp<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        self.reduction(self.value.logsumexp::<Axes>(), S::REDUCED, Route::LogSumExp)
    }
}

/// Traced standard deviations: `sqrt` of the traced variance, so the gradient is `var`'s and `sqrt`'s.
macro_rules! traced_std {
    ($($(#[$m:meta])* $name:ident, $keep:ident, $all:ident => $var:ident, $var_keep:ident, $var_all:ident;)*) => {
        impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::Output, D>
                where
                    S: ReduceShape<Axes>,
                {
                    self.$var::<Axes>().sqrt()
                }
                #[doc = concat!("[`Self::", stringify!($name), "`] keeping the reduced axes as size 1.")]
                #[track_caller]
                pub fn $keep<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::KeepDim, D>
                where
                    S: ReduceShape<Axes>,
                {
                    self.$var_keep::<Axes>().sqrt()
                }
                #[doc = concat!("[`Self::", stringify!($name), "`] over every element (a rank-0 result).")]
                pub fn $all(&self) -> Traced<T, (), D> {
                    self.$var_all().sqrt()
                }
            )*
        }
    };
}
traced_std! {
    /// Unbiased standard deviation over the axes `Axes`.
    std, std_keepdim, std_all => var, var_keepdim, var_all;
    /// Population standard deviation over the axes `Axes`.
    std_population, std_population_keepdim, std_population_all =>
        var_population, var_population_keepdim, var_population_all;
}
