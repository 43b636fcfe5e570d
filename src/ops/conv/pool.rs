//! Max and average pooling over 1, 2 or 3 spatial axes (PyTorch's `max_pool1d/2d/3d`, `avg_pool1d/2d/3d`), with
//! the window as a type: [`Pool1d`], [`Pool2d`], [`Pool3d`] (the same kernel, stride and padding on every axis)
//! or [`Pool2dAxes`], [`Pool3dAxes`] (per axis), refined by [`PoolGeometry::ceil_mode`],
//! [`PoolGeometry::exclude_padding`] (PyTorch's `count_include_pad=False`) and [`PoolGeometry::dilation`] (or
//! per axis). The output sizes are in the type and a
//! `const` assertion checks them: `(size + 2 padding - dilation (kernel - 1) - 1) / stride + 1`, rounded up in
//! ceil mode (less one when the last window would start in the trailing padding, as in PyTorch).
//!
//! Every pooling runs the device's 2-D pooling kernel: a 1-D pooling as images of height 1, a 3-D one as a pass
//! over (height, width) and a pass over depth (a box window's max and average are those of the two passes).
//! Global pooling is a reduction; adaptive max pooling (in `adaptive.rs`) is built from the same kernel and from
//! gathers.
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::tensor::{Pool2d, Pool2dAxes, PoolGeometry};
//! let x: Tensor<f32, Rank4<1, 1, 4, 5>, Cpu> = Tensor::arange(); // rows 0..5, 5..10, 10..15, 15..20
//! // 2x2 windows, stride 2: the fifth column is left over, unless ceil mode keeps a partial window.
//! let floor: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>);
//! let ceil: Tensor<f32, Rank4<1, 1, 2, 3>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>.ceil_mode());
//! assert_eq!(floor.to_array()[0][0], [[6., 8.], [16., 18.]]);
//! assert_eq!(ceil.to_array()[0][0], [[6., 8., 9.], [16., 18., 19.]]);
//! // A 1x3 window with padding 1 along the width: PyTorch's default divides by 3, `exclude_padding` by the
//! // taps inside the input.
//! let w = Pool2dAxes::<1, 3, 1, 1, 0, 1>;
//! let counted: Tensor<f32, Rank4<1, 1, 4, 5>, Cpu> = x.avg_pool2d(w);
//! let inside: Tensor<f32, Rank4<1, 1, 4, 5>, Cpu> = x.avg_pool2d(w.exclude_padding());
//! assert_eq!(counted.to_array()[0][0][0], [1. / 3., 1., 2., 3., 7. / 3.]);
//! assert_eq!(inside.to_array()[0][0][0], [0.5, 1., 2., 3., 3.5]);
//! ```

use crate::device::Device;
use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::{Pool, PoolParams};
use crate::shape::{Dims, Rank3, Rank4, Rank5, Shape};
use crate::tensor::Tensor;
use crate::tensor::{call, written};

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

/// The `const` checks of a pooling call: a well-formed window, no dilation in an average, and output sizes
/// that match the window arithmetic; `$op` names the call in the messages.
macro_rules! check_pool {
    ($op:literal, $pool:expr, $p:expr, $input:expr, $out:expr) => {
        const {
            let p = $p;
            assert!(
                p.is_valid(),
                concat!(
                    $op,
                    ": kernel, stride and dilation must be positive and the padding at most half the dilated kernel"
                )
            );
            assert!(
                matches!($pool, Pool::Max) || p.undilated(),
                concat!($op, ": average pooling has no dilation (as in PyTorch)")
            );
            assert!(
                p.fits($input, $out),
                concat!(
                    $op,
                    ": each output size must be (size + 2 padding - dilation (kernel - 1) - 1) / stride + 1, rounded up in ceil mode"
                )
            );
        }
    };
}

/// The 2-D pooling kernel over `view` (a rank-4 reading of `x`'s buffer) into a fresh tensor of the output type.
pub(super) fn pool_view<T: FloatDType, D: Device, S: Shape, SO: crate::shape::ConstShape>(
    x: &Tensor<T, S, D>,
    view: &Layout,
    pool: Pool,
    p: PoolParams<2>,
) -> Tensor<T, SO, D> {
    let src = (x.buffer(), view);
    written!(
        Tensor::written_by,
        Default::default(),
        pool.name(),
        call::pool2d::<T, D>(pool, src, p),
    )
}

/// The kernel's indices of each window's maximum over `view`, into a fresh tensor of the output type.
fn indices_view<T: FloatDType, D: Device, S: Shape, SO: crate::shape::ConstShape>(
    x: &Tensor<T, S, D>,
    view: &Layout,
    p: PoolParams<2>,
) -> Tensor<u32, SO, D> {
    let src = (x.buffer(), view);
    written!(
        Tensor::written_by,
        Default::default(),
        "max_pool2d_indices",
        call::max_pool2d_indices::<T, D>(src, p),
    )
}

/// A max pooling over `view` with each window's first-maximum index: the indices kernel, then the values read at
/// the indices (`max_pool2d_at`), so the host devices fold each window once instead of pooling and then finding
/// the indices apart.
pub(super) fn max_with_indices_view<
    T: FloatDType,
    D: Device,
    S: Shape,
    SO: crate::shape::ConstShape,
>(
    x: &Tensor<T, S, D>,
    view: &Layout,
    p: PoolParams<2>,
) -> (Tensor<T, SO, D>, Tensor<u32, SO, D>) {
    let at: Tensor<u32, SO, D> = indices_view(x, view, p);
    let [n, c, h, w] = view.dims4();
    let [oh, ow] = p
        .output([h, w])
        .expect("max_pool2d: window larger than the padded input (checked at build time)");
    let images = dense4([n, c, oh, ow], at.offset());
    let (src, idx) = ((x.buffer(), view), (at.buffer(), &images));
    let values = written!(
        Tensor::written_by,
        Default::default(),
        "max_pool2d",
        call::max_pool2d_at::<T, D>(src, idx, p),
    );
    (values, at)
}

/// An `(N, C, L)` layout read as the `(N, C, 1, L)` images a 1-D pooling runs on.
pub(super) fn ncl_as_nchw(l: &Layout) -> Layout {
    let (d, s) = (l.dims(), l.strides());
    Layout::from_parts(
        Dims::from_slice(&[d[0], d[1], 1, d[2]]),
        &[s[0], s[1], 0, s[2]],
        l.offset(),
    )
}

/// A dense layout of `dims` from `offset` (how the 3-D passes read a dense rank-5 buffer as rank 4).
pub(super) fn dense4(dims: [usize; 4], offset: usize) -> Layout {
    Layout::from_parts(
        Dims::from_slice(&dims),
        &[dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1],
        offset,
    )
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// Max pooling of `(N, C, H, W)` (PyTorch's `max_pool2d`): each output is its window's largest element
    /// (padding never wins; the first NaN of a window wins).
    pub fn max_pool2d<const OH: usize, const OW: usize, G: PoolGeometry<2>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        check_pool!("max_pool2d", Pool::Max, G::PARAMS, [H, W], [OH, OW]);
        pool_view(self, &self.layout(), Pool::Max, G::PARAMS)
    }

    /// Average pooling of `(N, C, H, W)` (PyTorch's `avg_pool2d`): padding counts as zeros in the divisor unless
    /// the window is [`PoolGeometry::exclude_padding`].
    pub fn avg_pool2d<const OH: usize, const OW: usize, G: PoolGeometry<2>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        check_pool!("avg_pool2d", Pool::Avg, G::PARAMS, [H, W], [OH, OW]);
        pool_view(self, &self.layout(), Pool::Avg, G::PARAMS)
    }

    /// Max pooling with where each maximum was found (PyTorch's `return_indices=True`): the index
    /// `row * W + column` within the input's `(H, W)` plane, the first of equal values in (row, column) order.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Pool2d;
    /// let x = Tensor::<f32, Rank4<1, 1, 2, 4>, Cpu>::from_array([[[[1., 5., 2., 2.], [3., 0., 7., 1.]]]]);
    /// let (max, at): (Tensor<f32, Rank4<1, 1, 1, 2>, Cpu>, _) = x.max_pool2d_with_indices(Pool2d::<2, 2, 0>);
    /// assert_eq!(max.to_vec(), [5., 7.]);
    /// assert_eq!(at.to_vec(), [1, 6]);
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn max_pool2d_with_indices<const OH: usize, const OW: usize, G: PoolGeometry<2>>(
        &self,
        _window: G,
    ) -> (
        Tensor<T, Rank4<N, C, OH, OW>, D>,
        Tensor<u32, Rank4<N, C, OH, OW>, D>,
    ) {
        check_pool!(
            "max_pool2d_with_indices",
            Pool::Max,
            G::PARAMS,
            [H, W],
            [OH, OW]
        );
        max_with_indices_view(self, &self.layout(), G::PARAMS)
    }

    /// Global average pooling (ONNX's `GlobalAveragePool`): the mean of each `(H, W)` plane.
    pub fn global_avg_pool2d(&self) -> Tensor<T, Rank4<N, C, 1, 1>, D> {
        self.mean_keepdim::<(crate::shape::Axis<2>, crate::shape::Axis<3>)>()
    }

    /// Global max pooling (ONNX's `GlobalMaxPool`): the largest element of each `(H, W)` plane.
    pub fn global_max_pool2d(&self) -> Tensor<T, Rank4<N, C, 1, 1>, D> {
        self.max_keepdim::<(crate::shape::Axis<2>, crate::shape::Axis<3>)>()
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
    Tensor<T, Rank3<N, C, L>, D>
{
    /// Max pooling of `(N, C, L)` (PyTorch's `max_pool1d`), with a [`Pool1d`] window.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Pool1d, PoolGeometry};
    /// let x = Tensor::<f32, Rank3<1, 1, 6>, Cpu>::from_array([[[1., 4., 2., 8., 5., 7.]]]);
    /// let y: Tensor<f32, Rank3<1, 1, 2>, Cpu> = x.max_pool1d(Pool1d::<2, 2, 0>.dilation::<2>());
    /// assert_eq!(y.to_vec(), [2., 5.]); // taps {0, 2} and {2, 4}
    /// ```
    pub fn max_pool1d<const OL: usize, G: PoolGeometry<1>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank3<N, C, OL>, D> {
        check_pool!("max_pool1d", Pool::Max, G::PARAMS, [L], [OL]);
        pool_view(
            self,
            &ncl_as_nchw(&self.layout()),
            Pool::Max,
            G::PARAMS.as_2d(),
        )
    }

    /// Average pooling of `(N, C, L)` (PyTorch's `avg_pool1d`), with a [`Pool1d`] window.
    pub fn avg_pool1d<const OL: usize, G: PoolGeometry<1>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank3<N, C, OL>, D> {
        check_pool!("avg_pool1d", Pool::Avg, G::PARAMS, [L], [OL]);
        pool_view(
            self,
            &ncl_as_nchw(&self.layout()),
            Pool::Avg,
            G::PARAMS.as_2d(),
        )
    }

    /// Max pooling with the index of each maximum along the length (see [`Tensor::max_pool2d_with_indices`]).
    #[allow(clippy::type_complexity)]
    pub fn max_pool1d_with_indices<const OL: usize, G: PoolGeometry<1>>(
        &self,
        _window: G,
    ) -> (
        Tensor<T, Rank3<N, C, OL>, D>,
        Tensor<u32, Rank3<N, C, OL>, D>,
    ) {
        check_pool!("max_pool1d_with_indices", Pool::Max, G::PARAMS, [L], [OL]);
        max_with_indices_view(self, &ncl_as_nchw(&self.layout()), G::PARAMS.as_2d())
    }
}

impl<
        T: FloatDType,
        const N: usize,
        const C: usize,
        const DP: usize,
        const H: usize,
        const W: usize,
        D: Device,
    > Tensor<T, Rank5<N, C, DP, H, W>, D>
{
    /// Max pooling of `(N, C, D, H, W)` (PyTorch's `max_pool3d`), with a [`Pool3d`] window.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Pool3d;
    /// let x: Tensor<f32, Rank5<1, 1, 2, 2, 2>, Cpu> = Tensor::arange();
    /// let y: Tensor<f32, Rank5<1, 1, 1, 1, 1>, Cpu> = x.max_pool3d(Pool3d::<2, 2, 0>);
    /// assert_eq!(y.to_vec(), [7.]);
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn max_pool3d<const OD: usize, const OH: usize, const OW: usize, G: PoolGeometry<3>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank5<N, C, OD, OH, OW>, D> {
        check_pool!("max_pool3d", Pool::Max, G::PARAMS, [DP, H, W], [OD, OH, OW]);
        self.pool3d_passes::<OD, OH, OW>(Pool::Max, G::PARAMS).1
    }

    /// Average pooling of `(N, C, D, H, W)` (PyTorch's `avg_pool3d`), with a [`Pool3d`] window.
    #[allow(clippy::type_complexity)]
    pub fn avg_pool3d<const OD: usize, const OH: usize, const OW: usize, G: PoolGeometry<3>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank5<N, C, OD, OH, OW>, D> {
        check_pool!("avg_pool3d", Pool::Avg, G::PARAMS, [DP, H, W], [OD, OH, OW]);
        self.pool3d_passes::<OD, OH, OW>(Pool::Avg, G::PARAMS).1
    }

    /// Max pooling with the index of each maximum within the input's `(D, H, W)` volume, `(depth H + row) W +
    /// column` (PyTorch's `max_pool3d(.., return_indices=True)`), the first of equal values in (depth, row,
    /// column) order, the first NaN when a window holds one.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Pool3d;
    /// let x: Tensor<f32, Rank5<1, 1, 2, 2, 2>, Cpu> = Tensor::from_array([[[[[1., 0.], [2., 5.]], [[5., 3.], [0., 4.]]]]]);
    /// let (max, at): (Tensor<f32, Rank5<1, 1, 1, 1, 1>, Cpu>, _) = x.max_pool3d_with_indices(Pool3d::<2, 2, 0>);
    /// assert_eq!((max.to_vec(), at.to_vec()), (vec![5.], vec![3])); // the first 5: depth 0, row 1, column 1
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn max_pool3d_with_indices<
        const OD: usize,
        const OH: usize,
        const OW: usize,
        G: PoolGeometry<3>,
    >(
        &self,
        _window: G,
    ) -> (
        Tensor<T, Rank5<N, C, OD, OH, OW>, D>,
        Tensor<u32, Rank5<N, C, OD, OH, OW>, D>,
    ) {
        check_pool!(
            "max_pool3d_with_indices",
            Pool::Max,
            G::PARAMS,
            [DP, H, W],
            [OD, OH, OW]
        );
        // The two passes, each with its indices: the plane pass gives `row * W + column` within each depth
        // slice, the depth pass `depth * OH OW + position` within the (D, OH OW) columns. The first max in
        // (depth, row, column) order is the first slice holding the window's max, then its first position there.
        let (plane, depth) = G::PARAMS.split();
        let x = self.contiguous();
        let slices = dense4([N, C * DP, H, W], x.offset());
        let (planes, in_plane): (Tensor<T, Rank5<N, C, DP, OH, OW>, D>, _) =
            max_with_indices_view(&x, &slices, plane);
        let columns = dense4([N, C, DP, OH * OW], planes.offset());
        let (out, in_column): (_, Tensor<u32, Rank5<N, C, OD, OH, OW>, D>) =
            max_with_indices_view(&planes, &columns, depth);
        let slice = in_column / (OH * OW) as u32;
        let at = in_plane.gather::<crate::shape::Axis<2>, u32, _>(&slice);
        (out, slice * (H * W) as u32 + &at)
    }

    /// The two passes of a 3-D pooling: over each depth slice's `(H, W)` plane, then along the depth of each
    /// output pixel (as images of `(D, OH * OW)`); both results.
    #[allow(clippy::type_complexity)]
    pub(super) fn pool3d_passes<const OD: usize, const OH: usize, const OW: usize>(
        &self,
        pool: Pool,
        p: PoolParams<3>,
    ) -> (
        Tensor<T, Rank5<N, C, DP, OH, OW>, D>,
        Tensor<T, Rank5<N, C, OD, OH, OW>, D>,
    ) {
        let (plane, depth) = p.split();
        let x = self.contiguous();
        let planes: Tensor<T, Rank5<N, C, DP, OH, OW>, D> =
            pool_view(&x, &dense4([N, C * DP, H, W], x.offset()), pool, plane);
        let out = pool_view(
            &planes,
            &dense4([N, C, DP, OH * OW], planes.offset()),
            pool,
            depth,
        );
        (planes, out)
    }
}

#[cfg(feature = "std")]
pub(super) use traced::traced_max_pool;

/// The traced forms: one recorded op per kernel pass, whose rule runs the pass's gradient (max: each window's to
/// its first maximum, whose index the forward pass kept, through the device's `max_pool2d_backward`; average:
/// each output's gradient divided by its divisor, spread over its window).
#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::{record_with, Gradients, Slot, Traced};
    use crate::ops::conv::grad::Dyn4;
    use crate::shape::ConstShape;
    use crate::tensor::{padded_shape, Grad, Padded};

    /// How a rule reads the padded values of a pooling pass as the NCHW images its kernel pooled.
    #[derive(Clone, Copy)]
    enum Images {
        /// Rank 4: the images themselves.
        Planes,
        /// Rank 3 `(N, C, L)`: images of height 1.
        Rows,
        /// Rank 5 `(N, C, D, H, W)`, the plane pass of a 3-D pooling: `(N, C D, H, W)`.
        Slices,
        /// Rank 5, the depth pass: `(N, C, D, H W)`.
        Columns,
    }

    impl Images {
        /// The padded value `t` (the pass's input or output, or its indices) as the pass's images.
        fn read<T: crate::dtype::WithDType, D: Device>(self, t: &Grad<T, D>) -> Tensor<T, Dyn4, D> {
            let d = t.dims();
            let shape = match self {
                Images::Planes => (d[2], d[3], d[4], d[5]),
                Images::Rows => (d[3], d[4], 1, d[5]),
                Images::Slices => (d[1], d[2] * d[3], d[4], d[5]),
                Images::Columns => (d[1], d[2], d[3], d[4] * d[5]),
            };
            t.relabel(shape)
        }
    }

    /// What an average pooling pass's rule keeps: the input's slot, how to read the gradient as images, the
    /// input's images' dims and its padded shape, and the window.
    type AvgCaptured = (Slot, Images, Dyn4, Padded, PoolParams<2>);

    /// An average pooling pass's gradient, in the input's padded shape.
    fn avg_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, images, input, shape, p): AvgCaptured,
        store: &mut Gradients,
    ) {
        let grad = images.read(&g).avg_pool2d_grad(p, input);
        slot.give_padded(store, grad.relabel(shape));
    }

    /// Records an average pooling pass of `x`, read through `view` (its images), whose result is `value`.
    fn record_avg<T: FloatDType, D: Device, S: Shape, SO: Shape>(
        x: &Traced<T, S, D>,
        value: Tensor<T, SO, D>,
        view: &Layout,
        images: Images,
        p: PoolParams<2>,
    ) -> Traced<T, SO, D> {
        let [n, c, h, w] = view.dims4();
        let captured = (
            x.slot(),
            images,
            (n, c, h, w),
            padded_shape(&x.value.dims()),
            p,
        );
        record_with(value, &[&x.node], captured, avg_rule::<T, D>)
    }

    /// What a max pooling pass's rule keeps: the input's slot, how to read the output's gradient and indices as
    /// images, each window's index (padded, the output's shape), the input's images' dims and its padded shape,
    /// and the window.
    type MaxCaptured<D> = (Slot, Images, Grad<u32, D>, Dyn4, Padded, PoolParams<2>);

    /// A max pooling pass's gradient, in the input's padded shape: each window's to the index it kept.
    fn max_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, images, at, input, shape, p): MaxCaptured<D>,
        store: &mut Gradients,
    ) {
        let grad = images.read(&g).max_pool2d_grad(&images.read(&at), input, p);
        slot.give_padded(store, grad.relabel(shape));
    }

    /// A traced max pooling of `x`'s NCHW images (rank 4) or `(N, C, L)` rows (rank 3) with the window `p`,
    /// recorded as one pass: `max_pool1d/2d`, and adaptive max pooling's bins when they divide the input.
    pub(in crate::ops::conv) fn traced_max_pool<
        T: FloatDType,
        D: Device,
        S: Shape,
        SO: ConstShape,
    >(
        x: &Traced<T, S, D>,
        p: PoolParams<2>,
    ) -> Traced<T, SO, D> {
        let layout = x.value.layout();
        if layout.rank() == 3 {
            record_max(x, &x.value, &ncl_as_nchw(&layout), Images::Rows, p)
        } else {
            record_max(x, &x.value, &layout, Images::Planes, p)
        }
    }

    /// Records a max pooling pass of `x` over `src` (`x`'s value, or a dense copy of it) read through `view`:
    /// the values and indices in one pass ([`max_with_indices_view`]), the indices kept for the gradient.
    fn record_max<T: FloatDType, D: Device, S: Shape, S2: Shape, SO: ConstShape>(
        x: &Traced<T, S, D>,
        src: &Tensor<T, S2, D>,
        view: &Layout,
        images: Images,
        p: PoolParams<2>,
    ) -> Traced<T, SO, D> {
        let (value, at): (Tensor<T, SO, D>, Tensor<u32, SO, D>) =
            max_with_indices_view(src, view, p);
        let [n, c, h, w] = view.dims4();
        let captured = (
            x.slot(),
            images,
            at.padded(),
            (n, c, h, w),
            padded_shape(&x.value.dims()),
            p,
        );
        record_with(value, &[&x.node], captured, max_rule::<T, D>)
    }

    impl<
            T: FloatDType,
            const N: usize,
            const C: usize,
            const H: usize,
            const W: usize,
            D: Device,
        > Traced<T, Rank4<N, C, H, W>, D>
    {
        /// Max pooling (see [`Tensor::max_pool2d`]); each window's gradient goes to its first maximum in (row,
        /// column) order, or its first NaN (PyTorch's rule).
        pub fn max_pool2d<const OH: usize, const OW: usize, G: PoolGeometry<2>>(
            &self,
            _window: G,
        ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
            check_pool!("max_pool2d", Pool::Max, G::PARAMS, [H, W], [OH, OW]);
            traced_max_pool(self, G::PARAMS)
        }

        /// Average pooling (see [`Tensor::avg_pool2d`]).
        pub fn avg_pool2d<const OH: usize, const OW: usize, G: PoolGeometry<2>>(
            &self,
            window: G,
        ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
            let y = self.value.avg_pool2d(window);
            record_avg(self, y, &self.value.layout(), Images::Planes, G::PARAMS)
        }

        /// Global average pooling (see [`Tensor::global_avg_pool2d`]).
        pub fn global_avg_pool2d(&self) -> Traced<T, Rank4<N, C, 1, 1>, D> {
            self.mean_keepdim::<(crate::shape::Axis<2>, crate::shape::Axis<3>)>()
        }

        /// Global max pooling (see [`Tensor::global_max_pool2d`]); ties split the gradient.
        pub fn global_max_pool2d(&self) -> Traced<T, Rank4<N, C, 1, 1>, D> {
            self.max_keepdim::<(crate::shape::Axis<2>, crate::shape::Axis<3>)>()
        }
    }

    impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
        Traced<T, Rank3<N, C, L>, D>
    {
        /// Max pooling (see [`Tensor::max_pool1d`]).
        pub fn max_pool1d<const OL: usize, G: PoolGeometry<1>>(
            &self,
            _window: G,
        ) -> Traced<T, Rank3<N, C, OL>, D> {
            check_pool!("max_pool1d", Pool::Max, G::PARAMS, [L], [OL]);
            traced_max_pool(self, G::PARAMS.as_2d())
        }

        /// Average pooling (see [`Tensor::avg_pool1d`]).
        pub fn avg_pool1d<const OL: usize, G: PoolGeometry<1>>(
            &self,
            window: G,
        ) -> Traced<T, Rank3<N, C, OL>, D> {
            let y = self.value.avg_pool1d(window);
            let view = ncl_as_nchw(&self.value.layout());
            record_avg(self, y, &view, Images::Rows, G::PARAMS.as_2d())
        }
    }

    impl<
            T: FloatDType,
            const N: usize,
            const C: usize,
            const DP: usize,
            const H: usize,
            const W: usize,
            D: Device,
        > Traced<T, Rank5<N, C, DP, H, W>, D>
    {
        /// Max pooling (see [`Tensor::max_pool3d`]).
        #[allow(clippy::type_complexity)]
        pub fn max_pool3d<const OD: usize, const OH: usize, const OW: usize, G: PoolGeometry<3>>(
            &self,
            _window: G,
        ) -> Traced<T, Rank5<N, C, OD, OH, OW>, D> {
            check_pool!("max_pool3d", Pool::Max, G::PARAMS, [DP, H, W], [OD, OH, OW]);
            self.pool3d(Pool::Max, G::PARAMS)
        }

        /// Average pooling (see [`Tensor::avg_pool3d`]).
        #[allow(clippy::type_complexity)]
        pub fn avg_pool3d<const OD: usize, const OH: usize, const OW: usize, G: PoolGeometry<3>>(
            &self,
            _window: G,
        ) -> Traced<T, Rank5<N, C, OD, OH, OW>, D> {
            check_pool!("avg_pool3d", Pool::Avg, G::PARAMS, [DP, H, W], [OD, OH, OW]);
            self.pool3d(Pool::Avg, G::PARAMS)
        }

        /// The two recorded passes of a 3-D pooling (see `Tensor::pool3d_passes`).
        fn pool3d<const OD: usize, const OH: usize, const OW: usize>(
            &self,
            pool: Pool,
            p: PoolParams<3>,
        ) -> Traced<T, Rank5<N, C, OD, OH, OW>, D> {
            let (plane, depth) = p.split();
            match pool {
                Pool::Max => {
                    let x = self.value.contiguous();
                    let slices = dense4([N, C * DP, H, W], x.offset());
                    let planes: Traced<T, Rank5<N, C, DP, OH, OW>, D> =
                        record_max(self, &x, &slices, Images::Slices, plane);
                    let columns = dense4([N, C, DP, OH * OW], planes.value.offset());
                    record_max(&planes, &planes.value, &columns, Images::Columns, depth)
                }
                Pool::Avg => {
                    let (planes, out) = self.value.pool3d_passes::<OD, OH, OW>(pool, p);
                    let slices = dense4([N, C * DP, H, W], 0); // read for its dims only
                    let planes = record_avg(self, planes, &slices, Images::Slices, plane);
                    let columns = dense4([N, C, DP, OH * OW], 0);
                    record_avg(&planes, out, &columns, Images::Columns, depth)
                }
            }
        }
    }
}
