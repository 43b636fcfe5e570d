//! The family's `Tensor` methods: max and average pooling over 1, 2 and 3 axes, with indices, and global
//! pooling; each runs the device's 2-D pooling kernel.

use super::{AvgPoolGeometry, Pool, PoolGeometry, PoolParams};
use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::size_check::static_dims;
use crate::shape::{Dims, Rank1, Rank2, Rank3, Rank4, Rank5, Shape};
use crate::tensor::Tensor;
use crate::tensor::{call, written};
use core::marker::PhantomData;

/// The build-time rules of a pooling over `A` axes (max when `MAX`) of an input whose pooled dims are `In` into
/// `Out` with window `G` (see [`PoolParams::check`]). An associated `const` named by the tensor methods and
/// their traced twins alike, so a mistake is one error at the user's call.
pub(super) struct PoolFits<G, In, Out, const A: usize, const MAX: bool>(PhantomData<(G, In, Out)>);

impl<G: PoolGeometry<A>, In: Shape, Out: Shape, const A: usize, const MAX: bool>
    PoolFits<G, In, Out, A, MAX>
{
    pub(super) const OK: () = {
        let op = match (MAX, A) {
            (true, 1) => "max_pool1d",
            (true, 2) => "max_pool2d",
            (true, _) => "max_pool3d",
            (false, 1) => "avg_pool1d",
            (false, 2) => "avg_pool2d",
            (false, _) => "avg_pool3d",
        };
        G::PARAMS.check(op, sizes::<In, A>(), sizes::<Out, A>())
    };
}

/// The first `A` static dims of `S` (a pooling's input or output sizes).
const fn sizes<S: Shape, const A: usize>() -> [usize; A] {
    let (all, mut out, mut i) = (static_dims::<S>(), [0; A], 0);
    while i < A {
        out[i] = all[i];
        i += 1;
    }
    out
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
pub(super) fn indices_view<T: FloatDType, D: Device, S: Shape, SO: crate::shape::ConstShape>(
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
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Pool2d;
    /// let x: Tensor<f32, Rank4<1, 1, 4, 4>, Cpu> = Tensor::arange();
    /// let y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>);
    /// assert_eq!(y.to_array()[0][0], [[5., 7.], [13., 15.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::conv_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Pool2d;
    /// let x: Tensor<f32, Rank4<1, 1, 4, 4>, Cpu> = Tensor::arange();
    /// // 2x2 windows with stride 2 give (4 - 2) / 2 + 1 = 2 per axis, not 3.
    /// let y: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>);
    /// ```
    pub fn max_pool2d<const OH: usize, const OW: usize, G: PoolGeometry<2>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        let () = PoolFits::<G, Rank2<H, W>, Rank2<OH, OW>, 2, true>::OK;
        pool_view(self, &self.layout(), Pool::Max, G::PARAMS)
    }

    /// Average pooling of `(N, C, H, W)` (PyTorch's `avg_pool2d`): padding counts as zeros in the divisor unless
    /// the window is [`PoolGeometry::exclude_padding`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Pool2d;
    /// let x: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = Tensor::arange();
    /// let y: Tensor<f32, Rank4<1, 1, 1, 1>, Cpu> = x.avg_pool2d(Pool2d::<2, 2, 0>);
    /// assert_eq!(y.to_array()[0][0], [[1.5]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::conv_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Pool2d, PoolGeometry};
    /// let x: Tensor<f32, Rank4<1, 1, 4, 4>, Cpu> = Tensor::arange();
    /// // Average pooling has no dilation, as in PyTorch (max pooling has).
    /// let y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.avg_pool2d(Pool2d::<2, 1, 0>.dilation::<2>());
    /// ```
    pub fn avg_pool2d<const OH: usize, const OW: usize, G: AvgPoolGeometry<2>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        let () = PoolFits::<G, Rank2<H, W>, Rank2<OH, OW>, 2, false>::OK;
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
        let () = PoolFits::<G, Rank2<H, W>, Rank2<OH, OW>, 2, true>::OK;
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
    /// Max pooling of `(N, C, L)` (PyTorch's `max_pool1d`), with a [`Pool1d`](super::Pool1d) window.
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
        let () = PoolFits::<G, Rank1<L>, Rank1<OL>, 1, true>::OK;
        pool_view(
            self,
            &ncl_as_nchw(&self.layout()),
            Pool::Max,
            G::PARAMS.as_2d(),
        )
    }

    /// Average pooling of `(N, C, L)` (PyTorch's `avg_pool1d`), with a [`Pool1d`](super::Pool1d) window.
    pub fn avg_pool1d<const OL: usize, G: AvgPoolGeometry<1>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank3<N, C, OL>, D> {
        let () = PoolFits::<G, Rank1<L>, Rank1<OL>, 1, false>::OK;
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
        let () = PoolFits::<G, Rank1<L>, Rank1<OL>, 1, true>::OK;
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
    /// Max pooling of `(N, C, D, H, W)` (PyTorch's `max_pool3d`), with a [`Pool3d`](super::Pool3d) window.
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
        let () = PoolFits::<G, Rank3<DP, H, W>, Rank3<OD, OH, OW>, 3, true>::OK;
        self.pool3d_passes::<OD, OH, OW>(Pool::Max, G::PARAMS).1
    }

    /// Average pooling of `(N, C, D, H, W)` (PyTorch's `avg_pool3d`), with a [`Pool3d`](super::Pool3d) window.
    #[allow(clippy::type_complexity)]
    pub fn avg_pool3d<const OD: usize, const OH: usize, const OW: usize, G: AvgPoolGeometry<3>>(
        &self,
        _window: G,
    ) -> Tensor<T, Rank5<N, C, OD, OH, OW>, D> {
        let () = PoolFits::<G, Rank3<DP, H, W>, Rank3<OD, OH, OW>, 3, false>::OK;
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
        let () = PoolFits::<G, Rank3<DP, H, W>, Rank3<OD, OH, OW>, 3, true>::OK;
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
