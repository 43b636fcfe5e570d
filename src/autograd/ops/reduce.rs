//! Reductions: a sum's gradient is spread back over the reduced axes (a stride-0 view, no copy); a mean's is
//! scaled by the count; max and min route it to every position equal to the result (as candle does; PyTorch's
//! `max(dim)` picks one index, its `amax` splits evenly).

use crate::autograd::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::ops::{self, CmpOp};
use crate::shape::{ReduceShape, Shape, MAX_RANK};
use crate::tensor::Tensor;

/// How a reduction's gradient reaches its input.
#[derive(Clone, Copy)]
enum Route {
    /// Every element gets the output's gradient times `scale`.
    Spread { scale: f64 },
    /// Elements equal to the output get its gradient.
    Extremum,
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Records a reduction over `reduced` whose result is `value`.
    fn reduction<S2: Shape>(
        &self,
        value: Tensor<T, S2, D>,
        reduced: [bool; MAX_RANK],
        route: Route,
    ) -> Traced<T, S2, D> {
        let x = self.value.clone();
        let out = value.clone();
        self.unary_op(value, move |g| {
            let spread = g.spread_over(x.shape(), &reduced);
            match route {
                Route::Spread { scale: 1.0 } => spread,
                Route::Spread { scale } => spread.affine(scale, 0.0),
                Route::Extremum => {
                    let at = x.mask_same(CmpOp::Eq, &out.spread_over(x.shape(), &reduced));
                    spread.zip_same(ops::Mul, &at)
                }
            }
        })
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
                pub fn $name<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::Output, D>
                where
                    S: ReduceShape<Axes>,
                {
                    let reduced = S::REDUCED;
                    let route = $route(self.count(&reduced));
                    self.reduction(self.value.$name::<Axes>(), reduced, route)
                }

                #[doc = concat!("[`Self::", stringify!($name), "`] keeping the reduced axes as size 1.")]
                pub fn $keep<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::KeepDim, D>
                where
                    S: ReduceShape<Axes>,
                {
                    let reduced = S::REDUCED;
                    let route = $route(self.count(&reduced));
                    self.reduction(self.value.$keep::<Axes>(), reduced, route)
                }

                #[doc = concat!("[`Self::", stringify!($name), "`] over every element (a rank-0 result).")]
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
    /// Maximum over the axes `Axes`; the gradient goes to every position holding the maximum.
    max, max_keepdim, max_all => |_| Route::Extremum;
    /// Minimum over the axes `Axes`; the gradient goes to every position holding the minimum.
    min, min_keepdim, min_all => |_| Route::Extremum;
}
