//! The family's traced forms: one recorded op per kernel pass, whose rule runs the pass's gradient (max: each window's to
//! its first maximum, whose index the forward pass kept, through the device's `max_pool2d_backward`; average:
//! each output's gradient divided by its divisor, spread over its window).

use super::tensor::{dense4, max_with_indices_view, ncl_as_nchw, PoolFits};
use super::{AvgPoolGeometry, Pool, PoolGeometry, PoolParams};
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::conv::grad::Dyn4;
use crate::ops::Device;
use crate::shape::ConstShape;
use crate::shape::{Rank1, Rank2, Rank3, Rank4, Rank5, Shape};
use crate::tensor::Tensor;
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
pub(super) fn traced_max_pool<T: FloatDType, D: Device, S: Shape, SO: ConstShape>(
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
    let (value, at): (Tensor<T, SO, D>, Tensor<u32, SO, D>) = max_with_indices_view(src, view, p);
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

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Traced<T, Rank4<N, C, H, W>, D>
{
    /// Max pooling (see [`Tensor::max_pool2d`]); each window's gradient goes to its first maximum in (row,
    /// column) order, or its first NaN (PyTorch's rule).
    pub fn max_pool2d<const OH: usize, const OW: usize, G: PoolGeometry<2>>(
        &self,
        _window: G,
    ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
        let () = PoolFits::<G, Rank2<H, W>, Rank2<OH, OW>, 2, true>::OK;
        traced_max_pool(self, G::PARAMS)
    }

    /// Average pooling (see [`Tensor::avg_pool2d`]).
    pub fn avg_pool2d<const OH: usize, const OW: usize, G: AvgPoolGeometry<2>>(
        &self,
        window: G,
    ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
        let () = PoolFits::<G, Rank2<H, W>, Rank2<OH, OW>, 2, false>::OK;
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
        let () = PoolFits::<G, Rank1<L>, Rank1<OL>, 1, true>::OK;
        traced_max_pool(self, G::PARAMS.as_2d())
    }

    /// Average pooling (see [`Tensor::avg_pool1d`]).
    pub fn avg_pool1d<const OL: usize, G: AvgPoolGeometry<1>>(
        &self,
        window: G,
    ) -> Traced<T, Rank3<N, C, OL>, D> {
        let () = PoolFits::<G, Rank1<L>, Rank1<OL>, 1, false>::OK;
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
        let () = PoolFits::<G, Rank3<DP, H, W>, Rank3<OD, OH, OW>, 3, true>::OK;
        self.pool3d(Pool::Max, G::PARAMS)
    }

    /// Average pooling (see [`Tensor::avg_pool3d`]).
    #[allow(clippy::type_complexity)]
    pub fn avg_pool3d<const OD: usize, const OH: usize, const OW: usize, G: AvgPoolGeometry<3>>(
        &self,
        _window: G,
    ) -> Traced<T, Rank5<N, C, OD, OH, OW>, D> {
        let () = PoolFits::<G, Rank3<DP, H, W>, Rank3<OD, OH, OW>, 3, false>::OK;
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
