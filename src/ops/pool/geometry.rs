//! Pooling windows as types: [`Pool1d`], [`Pool2d`], [`Pool3d`] (the same kernel, stride and padding on every
//! axis), [`Pool2dAxes`], [`Pool3dAxes`] (per axis), and the refinements [`PoolGeometry`]'s methods return.

use super::PoolParams;

/// A pooling window over `A` spatial axes, as a type: [`Pool1d`], [`Pool2d`], [`Pool2dAxes`], [`Pool3d`], and
/// the refinements its methods return. The output size is checked against it at build time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a pooling window over {A} axes",
    label = "this window does not fit the pooling",
    note = "Pool1d windows pool (N, C, L), Pool2d and Pool2dAxes (N, C, H, W), Pool3d (N, C, D, H, W)"
)]
pub trait PoolGeometry<const A: usize>: Copy {
    /// The window, shape-erased for the kernels.
    const PARAMS: PoolParams<A>;

    /// Output sizes rounded up (PyTorch's `ceil_mode=True`): a last partial window is kept when it starts inside
    /// the input or its leading padding.
    fn ceil_mode(self) -> CeilMode<Self> {
        CeilMode(self)
    }

    /// Averages divide by the number of window taps inside the input (PyTorch's `count_include_pad=False`)
    /// instead of by the window's size.
    fn exclude_padding(self) -> ExcludePadding<Self> {
        ExcludePadding(self)
    }

    /// Window taps `DIL` apart on every axis (max pooling only: PyTorch's average pooling has no dilation).
    fn dilation<const DIL: usize>(self) -> Dilation<Self, DIL> {
        Dilation(self)
    }

    /// A 2-D window's taps `DH` rows and `DW` columns apart (PyTorch's `dilation=(DH, DW)`; max pooling only).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Pool2d, PoolGeometry};
    /// let x: Tensor<f32, Rank4<1, 1, 3, 4>, Cpu> = Tensor::arange();
    /// // 2x2 taps, rows 2 apart and columns 3 apart: the corners 0, 3, 8 and 11.
    /// let y: Tensor<f32, Rank4<1, 1, 1, 1>, Cpu> = x.max_pool2d(Pool2d::<2, 1, 0>.dilation_axes::<2, 3>());
    /// assert_eq!(y.to_vec(), [11.]);
    /// ```
    fn dilation_axes<const DH: usize, const DW: usize>(self) -> DilationAxes<Self, DH, DW> {
        DilationAxes(self)
    }

    /// A 3-D window's taps `DD` slices, `DH` rows and `DW` columns apart (PyTorch's `dilation=(DD, DH, DW)`;
    /// max pooling only).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Pool3d, PoolGeometry};
    /// let x: Tensor<f32, Rank5<1, 1, 3, 2, 3>, Cpu> = Tensor::arange();
    /// // 2x2x2 taps, slices 2 apart, rows 1 apart, columns 2 apart: the largest is slice 2, row 1, column 2.
    /// let y: Tensor<f32, Rank5<1, 1, 1, 1, 1>, Cpu> =
    ///     x.max_pool3d(Pool3d::<2, 1, 0>.dilation_axes_3d::<2, 1, 2>());
    /// assert_eq!(y.to_vec(), [17.]);
    /// ```
    fn dilation_axes_3d<const DD: usize, const DH: usize, const DW: usize>(
        self,
    ) -> DilationAxes3d<Self, DD, DH, DW> {
        DilationAxes3d(self)
    }
}

/// A 1-D window: `KERNEL` wide, `STRIDE` apart, `PADDING` on both ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pool1d<const KERNEL: usize, const STRIDE: usize, const PADDING: usize>;

/// A square 2-D window: `KERNEL x KERNEL`, `STRIDE` apart and `PADDING` on every side.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pool2d<const KERNEL: usize, const STRIDE: usize, const PADDING: usize>;

/// A 2-D window per axis (height, then width), PyTorch's tuple forms `kernel_size=(KH, KW), stride=(SH, SW),
/// padding=(PH, PW)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pool2dAxes<
    const KH: usize,
    const KW: usize,
    const SH: usize,
    const SW: usize,
    const PH: usize,
    const PW: usize,
>;

/// A cubic 3-D window: `KERNEL` on every axis, `STRIDE` apart, `PADDING` on every side.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pool3d<const KERNEL: usize, const STRIDE: usize, const PADDING: usize>;

/// A 3-D window per axis (depth, height, width), PyTorch's tuple forms `kernel_size=(KD, KH, KW), stride=(SD, SH,
/// SW), padding=(PD, PH, PW)`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::tensor::Pool3dAxes;
/// let x: Tensor<f32, Rank5<1, 1, 4, 4, 6>, Cpu> = Tensor::arange();
/// // Depth: 2 wide, stride 2; height: 1, stride 1; width: 3 wide, stride 2, padding 1.
/// let y: Tensor<f32, Rank5<1, 1, 2, 4, 3>, Cpu> = x.max_pool3d(Pool3dAxes::<2, 1, 3, 2, 1, 2, 0, 0, 1>);
/// // Slices 0 and 1, row 0, columns {-1, 0, 1}, {1, 2, 3} and {3, 4, 5}: the maxima are in slice 1 (24 + column).
/// assert_eq!(y.to_array()[0][0][0][0], [25., 27., 29.]);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Pool3dAxes<
    const KD: usize,
    const KH: usize,
    const KW: usize,
    const SD: usize,
    const SH: usize,
    const SW: usize,
    const PD: usize,
    const PH: usize,
    const PW: usize,
>;

/// A window with its output sizes rounded up: see [`PoolGeometry::ceil_mode`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CeilMode<G>(pub G);

/// A window whose averages leave the padding out: see [`PoolGeometry::exclude_padding`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ExcludePadding<G>(pub G);

/// A window with taps `DIL` apart: see [`PoolGeometry::dilation`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Dilation<G, const DIL: usize>(pub G);

/// A 2-D window with taps `DH` rows and `DW` columns apart: see [`PoolGeometry::dilation_axes`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DilationAxes<G, const DH: usize, const DW: usize>(pub G);

/// A 3-D window with taps `DD` slices, `DH` rows and `DW` columns apart: see [`PoolGeometry::dilation_axes_3d`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DilationAxes3d<G, const DD: usize, const DH: usize, const DW: usize>(pub G);

impl<const K: usize, const S: usize, const P: usize> PoolGeometry<1> for Pool1d<K, S, P> {
    const PARAMS: PoolParams<1> = PoolParams::square(K, S, P);
}

impl<const K: usize, const S: usize, const P: usize> PoolGeometry<2> for Pool2d<K, S, P> {
    const PARAMS: PoolParams<2> = PoolParams::square(K, S, P);
}

impl<const K: usize, const S: usize, const P: usize> PoolGeometry<3> for Pool3d<K, S, P> {
    const PARAMS: PoolParams<3> = PoolParams::square(K, S, P);
}

impl<
        const KH: usize,
        const KW: usize,
        const SH: usize,
        const SW: usize,
        const PH: usize,
        const PW: usize,
    > PoolGeometry<2> for Pool2dAxes<KH, KW, SH, SW, PH, PW>
{
    const PARAMS: PoolParams<2> = PoolParams {
        kernel: [KH, KW],
        stride: [SH, SW],
        padding: [PH, PW],
        ..PoolParams::square(1, 1, 0)
    };
}

impl<
        const KD: usize,
        const KH: usize,
        const KW: usize,
        const SD: usize,
        const SH: usize,
        const SW: usize,
        const PD: usize,
        const PH: usize,
        const PW: usize,
    > PoolGeometry<3> for Pool3dAxes<KD, KH, KW, SD, SH, SW, PD, PH, PW>
{
    const PARAMS: PoolParams<3> = PoolParams {
        kernel: [KD, KH, KW],
        stride: [SD, SH, SW],
        padding: [PD, PH, PW],
        ..PoolParams::square(1, 1, 0)
    };
}

impl<const A: usize, G: PoolGeometry<A>> PoolGeometry<A> for CeilMode<G> {
    const PARAMS: PoolParams<A> = PoolParams {
        ceil_mode: true,
        ..G::PARAMS
    };
}

impl<const A: usize, G: PoolGeometry<A>> PoolGeometry<A> for ExcludePadding<G> {
    const PARAMS: PoolParams<A> = PoolParams {
        count_include_pad: false,
        ..G::PARAMS
    };
}

impl<const A: usize, G: PoolGeometry<A>, const DIL: usize> PoolGeometry<A> for Dilation<G, DIL> {
    const PARAMS: PoolParams<A> = PoolParams {
        dilation: [DIL; A],
        ..G::PARAMS
    };
}

impl<G: PoolGeometry<2>, const DH: usize, const DW: usize> PoolGeometry<2>
    for DilationAxes<G, DH, DW>
{
    const PARAMS: PoolParams<2> = PoolParams {
        dilation: [DH, DW],
        ..G::PARAMS
    };
}

impl<G: PoolGeometry<3>, const DD: usize, const DH: usize, const DW: usize> PoolGeometry<3>
    for DilationAxes3d<G, DD, DH, DW>
{
    const PARAMS: PoolParams<3> = PoolParams {
        dilation: [DD, DH, DW],
        ..G::PARAMS
    };
}

/// A window average pooling can take: one without dilation, as in PyTorch (every geometry, refined by
/// `.ceil_mode()` or `.exclude_padding()`, or by a dilation of 1).
#[diagnostic::on_unimplemented(
    message = "average pooling has no dilation (as in PyTorch); `{Self}` is dilated",
    label = "a dilated window",
    note = "drop the `.dilation::<..>()` refinement, or use max pooling, which takes one"
)]
pub trait AvgPoolGeometry<const A: usize>: PoolGeometry<A> {}

#[diagnostic::do_not_recommend]
impl<const K: usize, const S: usize, const P: usize> AvgPoolGeometry<1> for Pool1d<K, S, P> {}
#[diagnostic::do_not_recommend]
impl<const K: usize, const S: usize, const P: usize> AvgPoolGeometry<2> for Pool2d<K, S, P> {}
#[diagnostic::do_not_recommend]
impl<const K: usize, const S: usize, const P: usize> AvgPoolGeometry<3> for Pool3d<K, S, P> {}
#[diagnostic::do_not_recommend]
impl<
        const KH: usize,
        const KW: usize,
        const SH: usize,
        const SW: usize,
        const PH: usize,
        const PW: usize,
    > AvgPoolGeometry<2> for Pool2dAxes<KH, KW, SH, SW, PH, PW>
{
}
#[diagnostic::do_not_recommend]
impl<
        const KD: usize,
        const KH: usize,
        const KW: usize,
        const SD: usize,
        const SH: usize,
        const SW: usize,
        const PD: usize,
        const PH: usize,
        const PW: usize,
    > AvgPoolGeometry<3> for Pool3dAxes<KD, KH, KW, SD, SH, SW, PD, PH, PW>
{
}
#[diagnostic::do_not_recommend]
impl<const A: usize, G: AvgPoolGeometry<A>> AvgPoolGeometry<A> for CeilMode<G> {}
#[diagnostic::do_not_recommend]
impl<const A: usize, G: AvgPoolGeometry<A>> AvgPoolGeometry<A> for ExcludePadding<G> {}
#[diagnostic::do_not_recommend]
impl<const A: usize, G: AvgPoolGeometry<A>> AvgPoolGeometry<A> for Dilation<G, 1> {}
#[diagnostic::do_not_recommend]
impl<G: AvgPoolGeometry<2>> AvgPoolGeometry<2> for DilationAxes<G, 1, 1> {}
#[diagnostic::do_not_recommend]
impl<G: AvgPoolGeometry<3>> AvgPoolGeometry<3> for DilationAxes3d<G, 1, 1, 1> {}
