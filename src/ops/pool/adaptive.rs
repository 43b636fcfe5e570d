//! Adaptive max pooling (PyTorch's `adaptive_max_pool1d/2d`): the output size is in the type and each output cell
//! takes the largest element of its bin of the input, bin `i` of `n -> out` spanning `[floor(i n / out), ceil((i
//! + 1) n / out))` (bins may overlap when `out` does not divide `n`). Adaptive average pooling is a resample
//! (`ops/resample/`).
//!
//! When every output size divides its input's, the bins are a regular window: one max pooling (its indices and
//! gradient those of `max_pool2d`). Otherwise one pass per axis: the pooling kernel along an axis whose output
//! size divides, else a running maximum over gathers (gather `k` holds each bin's `k`-th entry). The positions
//! come from the same passes, the width first so that the first maximum is in (row, column) order as in PyTorch;
//! the traced form gathers the input at them, so each bin's gradient goes to that one position.
use super::tensor::{max_with_indices_view, ncl_as_nchw, pool_view};
use super::{Pool, PoolParams};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::size_check;
use crate::shape::{Axis, BroadcastShapes, Const, Rank1, Rank2, Rank3, Rank4, Shape};
use crate::tensor::Tensor;

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// Adaptive max pooling of `(N, C, H, W)` to `(N, C, OH, OW)` (PyTorch's `adaptive_max_pool2d`): output
    /// cell `(i, j)` is the largest element of bin `[floor(i H / OH), ceil((i + 1) H / OH))` by the same along
    /// the width (a NaN in a bin is its maximum). See the module docs for how it runs.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<1, 1, 1, 5>, Cpu> = Tensor::from_array([[[[3., 1., 4., 1., 5.]]]]);
    /// let y: Tensor<f32, Rank4<1, 1, 1, 3>, Cpu> = x.adaptive_max_pool2d();
    /// assert_eq!(y.to_vec(), [3., 4., 5.]); // bins [0, 2), [1, 4), [3, 5)
    /// ```
    pub fn adaptive_max_pool2d<const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        let () = AdaptiveSizes::<H, W, OH, OW>::OK;
        if let Some(p) = dividing_window([H, W], [OH, OW]) {
            return pool_view(self, &self.layout(), Pool::Max, p);
        }
        let rows: Tensor<T, Rank4<N, C, OH, W>, D> = adaptive_max_along(
            self,
            H,
            |t| pool_view(t, &t.layout(), Pool::Max, adaptive_window(H, OH, true)),
            |t, idx| t.index_select::<Axis<2>, u32, Const<OH>>(idx),
        );
        adaptive_max_along(
            &rows,
            W,
            |t| pool_view(t, &t.layout(), Pool::Max, adaptive_window(W, OW, false)),
            |t, idx| t.index_select::<Axis<3>, u32, Const<OW>>(idx),
        )
    }

    /// Adaptive max pooling with where each maximum was found (PyTorch's `return_indices=True`): the index
    /// `row * W + column` within the input's `(H, W)` plane of the first maximum of each bin in (row, column)
    /// order, or of its first NaN.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<1, 1, 2, 3>, Cpu> = Tensor::from_array([[[[1., 7., 7.], [7., 2., 3.]]]]);
    /// let (max, at): (Tensor<f32, Rank4<1, 1, 1, 2>, Cpu>, _) = x.adaptive_max_pool2d_with_indices();
    /// assert_eq!(max.to_vec(), [7., 7.]); // bins: columns [0, 2) and [1, 3) of both rows
    /// assert_eq!(at.to_vec(), [1, 1]); // row 0 comes before row 1, column 1 before column 2
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn adaptive_max_pool2d_with_indices<const OH: usize, const OW: usize>(
        &self,
    ) -> (
        Tensor<T, Rank4<N, C, OH, OW>, D>,
        Tensor<u32, Rank4<N, C, OH, OW>, D>,
    ) {
        let () = AdaptiveSizes::<H, W, OH, OW>::OK;
        if let Some(p) = dividing_window([H, W], [OH, OW]) {
            return max_with_indices_view(self, &self.layout(), p);
        }
        let (out, columns, rows) = self.adaptive_argmax2d::<OH, OW>();
        let column = columns.gather::<Axis<2>, u32, _>(&rows);
        (out, rows * W as u32 + &column)
    }

    /// The two passes of an adaptive max pooling with their positions: along the width (`columns`: the column
    /// of each row's bin maximum), then along the height of that (`rows`: the row of each output's maximum).
    /// Width first, so that a tie goes to the earlier row, then to the earlier column there.
    #[allow(clippy::type_complexity)]
    pub(super) fn adaptive_argmax2d<const OH: usize, const OW: usize>(
        &self,
    ) -> (
        Tensor<T, Rank4<N, C, OH, OW>, D>,
        Tensor<u32, Rank4<N, C, H, OW>, D>,
        Tensor<u32, Rank4<N, C, OH, OW>, D>,
    ) {
        let () = AdaptiveSizes::<H, W, OH, OW>::OK;
        let (along_width, columns) = adaptive_argmax_along::<_, _, Rank4<N, C, H, OW>, D, OW>(
            self,
            W,
            |t| {
                let (max, at): (_, Tensor<u32, Rank4<N, C, H, OW>, D>) =
                    max_with_indices_view(t, &t.layout(), adaptive_window(W, OW, false));
                let column = &at - &((&at / W as u32) * W as u32); // at is row * W + column
                (max, column)
            },
            |t, idx| t.index_select::<Axis<3>, u32, Const<OW>>(idx),
            |idx| idx.broadcast(),
        );
        let (out, rows) = adaptive_argmax_along::<_, _, Rank4<N, C, OH, OW>, D, OH>(
            &along_width,
            H,
            |t| {
                let (max, at): (_, Tensor<u32, Rank4<N, C, OH, OW>, D>) =
                    max_with_indices_view(t, &t.layout(), adaptive_window(H, OH, true));
                (max, at / OW as u32) // at is row * OW + column
            },
            |t, idx| t.index_select::<Axis<2>, u32, Const<OH>>(idx),
            |idx| idx.reshape::<Rank2<OH, 1>>().broadcast(),
        );
        (out, columns, rows)
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
    Tensor<T, Rank3<N, C, L>, D>
{
    /// Adaptive max pooling of `(N, C, L)` to `(N, C, OL)` (see [`Tensor::adaptive_max_pool2d`]).
    pub fn adaptive_max_pool1d<const OL: usize>(&self) -> Tensor<T, Rank3<N, C, OL>, D> {
        let () = AdaptiveSizes::<1, L, 1, OL>::OK;
        adaptive_max_along(
            self,
            L,
            |t| {
                let p = adaptive_window(L, OL, false);
                pool_view(t, &ncl_as_nchw(&t.layout()), Pool::Max, p)
            },
            |t, idx| t.index_select::<Axis<2>, u32, Const<OL>>(idx),
        )
    }

    /// Adaptive max pooling with the position along the length of each bin's first maximum (or first NaN).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank3<1, 1, 5>, Cpu> = Tensor::from_array([[[3., 4., 4., 1., 5.]]]);
    /// let (max, at): (Tensor<f32, Rank3<1, 1, 3>, Cpu>, _) = x.adaptive_max_pool1d_with_indices();
    /// assert_eq!((max.to_vec(), at.to_vec()), (vec![4., 4., 5.], vec![1, 1, 4])); // bins [0, 2), [1, 4), [3, 5)
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn adaptive_max_pool1d_with_indices<const OL: usize>(
        &self,
    ) -> (
        Tensor<T, Rank3<N, C, OL>, D>,
        Tensor<u32, Rank3<N, C, OL>, D>,
    ) {
        let () = AdaptiveSizes::<1, L, 1, OL>::OK;
        adaptive_argmax_along::<_, _, Rank3<N, C, OL>, D, OL>(
            self,
            L,
            |t| max_with_indices_view(t, &ncl_as_nchw(&t.layout()), adaptive_window(L, OL, false)),
            |t, idx| t.index_select::<Axis<2>, u32, Const<OL>>(idx),
            |idx| idx.broadcast(),
        )
    }
}

/// The sizes of an adaptive max pooling of `(H, W)` to `(OH, OW)`: all at least 1 (a `const` assertion).
struct AdaptiveSizes<const H: usize, const W: usize, const OH: usize, const OW: usize>;

impl<const H: usize, const W: usize, const OH: usize, const OW: usize> AdaptiveSizes<H, W, OH, OW> {
    const OK: () = size_check::nonzero_sizes("adaptive_max_pool", [H, W], [OH, OW]);
}

/// The one 2-D window of an adaptive pooling of `input` to `out` when both output sizes divide the input's: the
/// bins are then a regular max pooling (one kernel pass, the first maximum in (row, column) order).
fn dividing_window(input: [usize; 2], out: [usize; 2]) -> Option<PoolParams<2>> {
    if input[0] % out[0] != 0 || input[1] % out[1] != 0 {
        return None;
    }
    let k = [input[0] / out[0], input[1] / out[1]];
    Some(PoolParams {
        kernel: k,
        stride: k,
        ..PoolParams::square(1, 1, 0)
    })
}

/// The 2-D window of an adaptive pooling along one axis whose size `n` is a multiple of its output size `out`:
/// `n / out` wide and apart, along the height (`rows`) or the width.
fn adaptive_window(n: usize, out: usize, rows: bool) -> PoolParams<2> {
    let k = n / out;
    let mut p = PoolParams::square(1, 1, 0);
    let axis = if rows { 0 } else { 1 };
    p.kernel[axis] = k;
    p.stride[axis] = k;
    p
}

/// Bin `i` of an adaptive pooling of `n` entries into `out`: `[floor(i n / out), ceil((i + 1) n / out))`.
fn adaptive_bin(i: usize, n: usize, out: usize) -> (usize, usize) {
    (i * n / out, ((i + 1) * n).div_ceil(out))
}

/// The index tensors of a non-dividing adaptive max pooling of `n` entries into `OUT`: tensor `k` holds, for
/// each bin, its `k`-th entry (its last for shorter bins, a repeat that cannot change a maximum).
fn adaptive_gathers<D: Device, const OUT: usize>(
    n: usize,
) -> impl Iterator<Item = Tensor<u32, Rank1<OUT>, D>> {
    let longest = (0..OUT)
        .map(|i| {
            let (lo, hi) = adaptive_bin(i, n, OUT);
            hi - lo
        })
        .max()
        .unwrap_or(0);
    (0..longest).map(move |k| {
        let mut fill = |idx: &mut [u32]| {
            for (i, v) in idx.iter_mut().enumerate() {
                let (lo, hi) = adaptive_bin(i, n, OUT);
                *v = (lo + k).min(hi - 1) as u32;
            }
        };
        Tensor::filled_with("adaptive_max_pool", Default::default(), &mut fill)
    })
}

/// Adaptive max pooling of `x` along one axis of `n` entries into `OUT`: the pooling `pool` when `OUT` divides
/// `n`, else the running `maximum` of the `gather`s.
fn adaptive_max_along<T: FloatDType, X, S, D: Device, const OUT: usize>(
    x: &X,
    n: usize,
    pool: impl Fn(&X) -> Tensor<T, S, D>,
    gather: impl Fn(&X, &Tensor<u32, Rank1<OUT>, D>) -> Tensor<T, S, D>,
) -> Tensor<T, S, D>
where
    S: Shape + BroadcastShapes<S, Output = S>,
{
    if n % OUT == 0 {
        return pool(x);
    }
    let mut gathers = adaptive_gathers::<D, OUT>(n).map(|idx| gather(x, &idx));
    let first = gathers
        .next()
        .expect("adaptive_max_pool: every bin holds at least one entry");
    gathers.fold(first, |acc, g| acc.maximum(&g))
}

/// [`adaptive_max_along`] with the position along the axis of each bin's first maximum: `pool` gives both when
/// `OUT` divides `n`; else the gathers are folded, each taken where it is greater than the maximum so far or
/// is the first NaN, and `spread` lays its indices out over the output.
fn adaptive_argmax_along<T: FloatDType, X, S, D: Device, const OUT: usize>(
    x: &X,
    n: usize,
    pool: impl Fn(&X) -> (Tensor<T, S, D>, Tensor<u32, S, D>),
    gather: impl Fn(&X, &Tensor<u32, Rank1<OUT>, D>) -> Tensor<T, S, D>,
    spread: impl Fn(&Tensor<u32, Rank1<OUT>, D>) -> Tensor<u32, S, D>,
) -> (Tensor<T, S, D>, Tensor<u32, S, D>)
where
    S: Shape + BroadcastShapes<S, Output = S>,
{
    if n % OUT == 0 {
        return pool(x);
    }
    let mut taken = adaptive_gathers::<D, OUT>(n).map(|idx| (gather(x, &idx), spread(&idx)));
    let first = taken
        .next()
        .expect("adaptive_max_pool: every bin holds at least one entry");
    taken.fold(first, |(max, at), (g, g_at)| {
        // Keep the maximum so far where `g <= max` or it is NaN; `g` wins where greater or a NaN over a number.
        let keep = g.le(&max).logical_or(&max.isnan());
        (keep.where_cond(&max, &g), keep.where_cond(&at, &g_at))
    })
}

#[cfg(feature = "std")]
mod traced {
    use super::super::traced::traced_max_pool;
    use super::*;
    use crate::autograd::Traced;

    impl<
            T: FloatDType,
            const N: usize,
            const C: usize,
            const H: usize,
            const W: usize,
            D: Device,
        > Traced<T, Rank4<N, C, H, W>, D>
    {
        /// Adaptive max pooling (see [`Tensor::adaptive_max_pool2d`]): the input gathered at each bin's first
        /// maximum, so the gradient goes to that one position (PyTorch's rule).
        pub fn adaptive_max_pool2d<const OH: usize, const OW: usize>(
            &self,
        ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
            let () = AdaptiveSizes::<H, W, OH, OW>::OK;
            if let Some(p) = dividing_window([H, W], [OH, OW]) {
                return traced_max_pool(self, p);
            }
            let (_, columns, rows) = self.value.adaptive_argmax2d::<OH, OW>();
            self.gather::<Axis<3>, u32, _>(&columns)
                .gather::<Axis<2>, u32, _>(&rows)
        }
    }

    impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
        Traced<T, Rank3<N, C, L>, D>
    {
        /// Adaptive max pooling (see [`Tensor::adaptive_max_pool1d`]); the gradient goes to each bin's first
        /// maximum.
        pub fn adaptive_max_pool1d<const OL: usize>(&self) -> Traced<T, Rank3<N, C, OL>, D> {
            let () = AdaptiveSizes::<1, L, 1, OL>::OK;
            if L % OL == 0 {
                return traced_max_pool(self, adaptive_window(L, OL, false));
            }
            let (_, at) = self.value.adaptive_max_pool1d_with_indices::<OL>();
            self.gather::<Axis<2>, u32, _>(&at)
        }
    }
}
