//! 3-D convolution of `(N, C, D, H, W)` volumes, as a sum of 2-D convolutions over depth slices: output slice
//! `od` is the sum over the kernel's depth taps `kd` of the conv2d of input slice `od * stride + kd * dilation -
//! padding` (taps in the depth padding left out) with the weight's slice `kd`. Every slice is a view, so each
//! term is one call of the device's conv2d kernel (im2col + GEMM on the CPU and the GPU, the direct loop on
//! `Embedded`) and no device needs a kernel of its own; the gradients are sums of the conv2d gradients over the
//! same pairs of slices.

use super::geometry::Conv;
use super::tensor::{convolve_views, Direction};
use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::Conv2dParams;
use crate::ops::Device;
use crate::shape::size_check::{self, static_dims, Window};
use crate::shape::{Axis, Rank3, Rank4, Rank5, Shape};
use crate::tensor::{device_ok, Tensor};

/// Hyper-parameters of a 3-D convolution, per spatial axis (depth, height, width), shape-erased for the backward
/// rules (the tensor API takes them as const generics and checks the output size at build time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv3dParams {
    /// Step between windows.
    pub stride: [usize; 3],
    /// Zeros added before (front, top, left).
    pub padding: [usize; 3],
    /// Zeros added after (back, bottom, right): `padding` unless the geometry is refined by
    /// [`Conv3dGeometry::asymmetric_padding_3d`].
    pub padding_end: [usize; 3],
    /// Spacing between kernel taps.
    pub dilation: [usize; 3],
    /// Channel groups (1: dense; C_in: depthwise).
    pub groups: usize,
}

impl Conv3dParams {
    /// The (height, width) part: the parameters of each depth slice's conv2d.
    pub const fn plane(&self) -> Conv2dParams {
        Conv2dParams {
            stride: [self.stride[1], self.stride[2]],
            padding: [self.padding[1], self.padding[2]],
            padding_end: [self.padding_end[1], self.padding_end[2]],
            dilation: [self.dilation[1], self.dilation[2]],
            groups: self.groups,
            output_padding: [0, 0],
        }
    }

    /// The input depth that output slice `od` reads through kernel depth tap `kd`, or `None` in the padding.
    pub const fn source_depth(&self, od: usize, kd: usize, depth: usize) -> Option<usize> {
        let padded = od * self.stride[0] + kd * self.dilation[0];
        if padded < self.padding[0] || padded - self.padding[0] >= depth {
            None
        } else {
            Some(padded - self.padding[0])
        }
    }

    /// Axis `axis` (0: depth, 1: height, 2: width) of these windows over an input of `size` with a kernel of
    /// `kernel`, for the build-time checks.
    const fn window(&self, axis: usize, size: usize, kernel: usize) -> Window {
        let padding = [self.padding[axis], self.padding_end[axis]];
        Window::along(
            size,
            kernel,
            self.stride[axis],
            padding,
            self.dilation[axis],
            false,
        )
    }
}

/// The build-time rules of [`Tensor::conv3d`] on an input `X` with a weight `Wt` into output sizes `O`: channels
/// and groups, each spatial output size. An associated `const`, named by the tensor method and its traced twin,
/// so a mistake is one error at the user's call.
pub(crate) struct Conv3dFits<G, X, Wt, O>(core::marker::PhantomData<(G, X, Wt, O)>);

impl<G: Conv3dGeometry, X: Shape, Wt: Shape, O: Shape> Conv3dFits<G, X, Wt, O> {
    pub(crate) const OK: () = {
        let (x, w, o) = (static_dims::<X>(), static_dims::<Wt>(), static_dims::<O>());
        let p = G::PARAMS_3D;
        size_check::conv_channels("conv3d", false, p.groups, x[1], w[1], w[0]);
        let names = ["depth", "height", "width"];
        let mut axis = 0;
        while axis < 3 {
            let window = p.window(axis, x[axis + 2], w[axis + 2]);
            size_check::window_out("conv3d", names[axis], window, o[axis]);
            axis += 1;
        }
    };
}

/// What [`Tensor::conv3d`] takes as its hyper-parameters: [`Conv`] (the same on every axis) or [`Conv3dAxes`]
/// (per axis). The output size is checked against them at build time.
pub trait Conv3dGeometry: Copy {
    /// The hyper-parameters, shape-erased.
    const PARAMS_3D: Conv3dParams;

    /// Different zero padding on each side, in place of the geometry's own: `FRONT` slices before the depth and
    /// `BACK` after, `TOP` and `BOTTOM` rows, `LEFT` and `RIGHT` columns (ONNX's `pads = [FRONT, TOP, LEFT,
    /// BACK, BOTTOM, RIGHT]`; [`same_padding`](crate::tensor::same_padding) gives the `SAME_UPPER` split per
    /// axis). Each output size is `(size + before + after - dilation (kernel - 1) - 1) / stride + 1`.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Conv, Conv3dGeometry};
    /// let x = Tensor::<f32, Rank5<1, 1, 3, 2, 2>, Cpu>::ones();
    /// let w = Tensor::<f32, Rank5<1, 1, 2, 1, 1>, Cpu>::ones();
    /// // One slice of zeros after the depth only: 3 outputs, the last reading one real slice.
    /// let y: Tensor<f32, Rank5<1, 1, 3, 2, 2>, Cpu> =
    ///     x.conv3d(&w, Conv::<1, 0, 1, 1>.asymmetric_padding_3d::<0, 1, 0, 0, 0, 0>());
    /// assert_eq!(y.to_array()[0][0].map(|s| s[0][0]), [2., 2., 1.]);
    /// ```
    fn asymmetric_padding_3d<
        const FRONT: usize,
        const BACK: usize,
        const TOP: usize,
        const BOTTOM: usize,
        const LEFT: usize,
        const RIGHT: usize,
    >(
        self,
    ) -> AsymmetricPadding3d<Self, FRONT, BACK, TOP, BOTTOM, LEFT, RIGHT> {
        AsymmetricPadding3d(self)
    }
}

/// A 3-D geometry with different padding on each side: see [`Conv3dGeometry::asymmetric_padding_3d`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AsymmetricPadding3d<
    G,
    const FRONT: usize,
    const BACK: usize,
    const TOP: usize,
    const BOTTOM: usize,
    const LEFT: usize,
    const RIGHT: usize,
>(pub G);

impl<
        G: Conv3dGeometry,
        const FRONT: usize,
        const BACK: usize,
        const TOP: usize,
        const BOTTOM: usize,
        const LEFT: usize,
        const RIGHT: usize,
    > Conv3dGeometry for AsymmetricPadding3d<G, FRONT, BACK, TOP, BOTTOM, LEFT, RIGHT>
{
    const PARAMS_3D: Conv3dParams = Conv3dParams {
        padding: [FRONT, TOP, LEFT],
        padding_end: [BACK, BOTTOM, RIGHT],
        ..G::PARAMS_3D
    };
}

impl<const STRIDE: usize, const PADDING: usize, const DILATION: usize, const GROUPS: usize>
    Conv3dGeometry for Conv<STRIDE, PADDING, DILATION, GROUPS>
{
    const PARAMS_3D: Conv3dParams = Conv3dParams {
        stride: [STRIDE; 3],
        padding: [PADDING; 3],
        padding_end: [PADDING; 3],
        dilation: [DILATION; 3],
        groups: GROUPS,
    };
}

/// 3-D convolution hyper-parameters per axis (depth, height, width): PyTorch's tuple forms `stride=(SD, SH, SW),
/// padding=(PD, PH, PW), dilation=(DD, DH, DW)`; [`Conv`] is the same on every axis.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::tensor::Conv3dAxes;
/// let x = Tensor::<f32, Rank5<1, 1, 4, 5, 5>, Cpu>::ones();
/// let w = Tensor::<f32, Rank5<1, 1, 2, 3, 3>, Cpu>::ones();
/// // Depth: stride 2, no padding -> (4 - 2) / 2 + 1 = 2; height and width: stride 1, padding 1 -> 5.
/// let y: Tensor<f32, Rank5<1, 1, 2, 5, 5>, Cpu> = x.conv3d(&w, Conv3dAxes::<2, 1, 1, 0, 1, 1, 1, 1, 1, 1>);
/// assert_eq!(y.to_array()[0][0][0][2][2], 18.); // a full 2x3x3 window
/// assert_eq!(y.to_array()[0][0][0][0][0], 8.); // a corner: 2x2x2 taps inside the input
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Conv3dAxes<
    const SD: usize,
    const SH: usize,
    const SW: usize,
    const PD: usize,
    const PH: usize,
    const PW: usize,
    const DD: usize,
    const DH: usize,
    const DW: usize,
    const GROUPS: usize,
>;

impl<
        const SD: usize,
        const SH: usize,
        const SW: usize,
        const PD: usize,
        const PH: usize,
        const PW: usize,
        const DD: usize,
        const DH: usize,
        const DW: usize,
        const GROUPS: usize,
    > Conv3dGeometry for Conv3dAxes<SD, SH, SW, PD, PH, PW, DD, DH, DW, GROUPS>
{
    const PARAMS_3D: Conv3dParams = Conv3dParams {
        stride: [SD, SH, SW],
        padding: [PD, PH, PW],
        padding_end: [PD, PH, PW],
        dilation: [DD, DH, DW],
        groups: GROUPS,
    };
}

/// Slice `index` of axis 2 of a rank-5 view: the rank-4 view a depth slice's conv2d reads.
fn depth_slice(layout: &Layout, index: usize) -> Layout {
    device_ok(layout.select("conv3d", 2, index))
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
    /// 3-D convolution (cross-correlation, as in PyTorch's `conv3d`) of `(N, C, D, H, W)` with a `(C_OUT, C /
    /// GROUPS, KD, KH, KW)` weight: `(N, C_OUT, OD, OH, OW)`, each output size `(size + 2 padding - dilation
    /// (kernel - 1) - 1) / stride + 1` (checked at build time). Computed as the sum over the kernel's depth taps of
    /// the 2-D convolutions of depth slices (see the module's note), on every device.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let x: Tensor<f32, Rank5<1, 1, 3, 2, 2>, Cpu> = Tensor::arange(); // depth slices 0..4, 4..8, 8..12
    /// let w = Tensor::<f32, Rank5<1, 1, 2, 2, 2>, Cpu>::ones();
    /// let y: Tensor<f32, Rank5<1, 1, 2, 1, 1>, Cpu> = x.conv3d(&w, Conv::<1, 0, 1, 1>);
    /// assert_eq!(y.to_vec(), [28., 60.]); // 0 + .. + 7, 4 + .. + 11
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn conv3d<
        const C_OUT: usize,
        const C_IN_G: usize,
        const KD: usize,
        const KH: usize,
        const KW: usize,
        const OD: usize,
        const OH: usize,
        const OW: usize,
        G: Conv3dGeometry,
    >(
        &self,
        weight: &Tensor<T, Rank5<C_OUT, C_IN_G, KD, KH, KW>, D>,
        _params: G,
    ) -> Tensor<T, Rank5<N, C_OUT, OD, OH, OW>, D> {
        #[rustfmt::skip]
        let () = Conv3dFits::<G, Rank5<N, C, DP, H, W>, Rank5<C_OUT, C_IN_G, KD, KH, KW>, Rank3<OD, OH, OW>>::OK;
        let p = G::PARAMS_3D;
        let (lx, lw) = (self.layout(), weight.layout());
        let slices: [Tensor<T, Rank4<N, C_OUT, OH, OW>, D>; OD] = core::array::from_fn(|od| {
            let mut sum: Option<Tensor<T, Rank4<N, C_OUT, OH, OW>, D>> = None;
            for kd in 0..KD {
                let Some(id) = p.source_depth(od, kd, DP) else {
                    continue;
                };
                let (xs, ws) = (depth_slice(&lx, id), depth_slice(&lw, kd));
                let term = convolve_views(
                    "conv3d",
                    (self.buffer(), &xs),
                    (weight.buffer(), &ws),
                    p.plane(),
                    Direction::Forward,
                );
                sum = Some(match sum {
                    None => term,
                    Some(mut s) => {
                        s += &term;
                        s
                    }
                });
            }
            sum.unwrap_or_else(Tensor::zeros)
        });
        Tensor::stack::<Axis<2>, OD>(&slices)
    }
}

#[cfg(feature = "std")]
mod traced {
    use super::super::grad::Dyn4;
    use super::*;
    use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
    use crate::ops::Add;
    use crate::tensor::{call, written, Grad};
    use alloc::vec::Vec;

    /// A runtime-sized rank-5 shape.
    type Dyn5 = (usize, usize, usize, usize, usize);

    /// A padded rank-5 value as the runtime `(N, C, D, H, W)` tensor it holds (a view).
    fn ncdhw<T: FloatDType, D: Device>(t: &Grad<T, D>) -> Tensor<T, Dyn5, D> {
        let d = t.dims();
        t.unpadded((d[1], d[2], d[3], d[4], d[5]))
    }

    /// Depth slice `index` of a runtime `(N, C, D, H, W)` tensor (a view).
    fn slice<T: FloatDType, D: Device>(t: &Tensor<T, Dyn5, D>, index: usize) -> Tensor<T, Dyn4, D> {
        let (n, c, _, h, w) = t.shape();
        t.select_to((n, c, h, w), 2, index)
    }

    /// The sum of `terms`, or zeros of `shape` when there are none.
    fn sum_or_zeros<T: FloatDType, D: Device>(
        terms: impl Iterator<Item = Tensor<T, Dyn4, D>>,
        shape: Dyn4,
    ) -> Tensor<T, Dyn4, D> {
        terms
            .reduce(|a, b| a.zip_same(Add, &b))
            .unwrap_or_else(|| Tensor::zeros_with_shape(shape))
    }

    /// Rank-4 `parts` of one shape stacked along a new axis 2.
    fn stack_depth<T: FloatDType, D: Device>(parts: &[Tensor<T, Dyn4, D>]) -> Tensor<T, Dyn5, D> {
        let (n, c, h, w) = parts[0].shape();
        let layouts: Vec<Layout> = parts.iter().map(|p| p.layout().unsqueeze(2)).collect();
        let views: Vec<_> = parts
            .iter()
            .zip(&layouts)
            .map(|(p, l)| (p.buffer(), l))
            .collect();
        written!(
            Tensor::written_by,
            (n, c, parts.len(), h, w),
            "conv3d",
            call::concat::<T, D>(&views, 2),
        )
    }

    /// conv3d's gradients, as sums of conv2d gradients over the (output slice, kernel tap) pairs the forward
    /// pass summed: input slice `id` gets the transposed convolutions of the output slices that read it, weight
    /// slice `kd` the weight gradients of the slices it was applied to.
    fn conv3d_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        ([sx, sw], [x, w], p): ([Slot; 2], [Grad<T, D>; 2], Conv3dParams),
        store: &mut Gradients,
    ) {
        let (g, x, w) = (ncdhw(&g), ncdhw(&x), ncdhw(&w));
        let ((n, c, depth, h, wd), (co, cig, kd_len, kh, kw)) = (x.shape(), w.shape());
        let od_len = g.shape().2;
        let plane = p.plane();
        sx.give_padded_with(store, || {
            let slices: Vec<_> = (0..depth)
                .map(|id| {
                    let terms = (0..od_len).flat_map(|od| {
                        (0..kd_len)
                            .filter(move |&kd| p.source_depth(od, kd, depth) == Some(id))
                            .map(move |kd| (od, kd))
                    });
                    let grads = terms.map(|(od, kd)| {
                        slice(&g, od).conv2d_input_grad(&slice(&w, kd), plane, (n, c, h, wd))
                    });
                    sum_or_zeros(grads, (n, c, h, wd))
                })
                .collect();
            stack_depth(&slices).padded()
        });
        sw.give_padded_with(store, || {
            let slices: Vec<_> = (0..kd_len)
                .map(|kd| {
                    let grads = (0..od_len).filter_map(|od| {
                        let id = p.source_depth(od, kd, depth)?;
                        Some(slice(&x, id).conv2d_weight_grad(
                            &slice(&g, od),
                            plane,
                            (co, cig, kh, kw),
                        ))
                    });
                    sum_or_zeros(grads, (co, cig, kh, kw))
                })
                .collect();
            stack_depth(&slices).padded()
        });
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
        /// 3-D convolution (see [`Tensor::conv3d`]); gradients for the input and the weight.
        #[allow(clippy::type_complexity)]
        pub fn conv3d<
            const C_OUT: usize,
            const C_IN_G: usize,
            const KD: usize,
            const KH: usize,
            const KW: usize,
            const OD: usize,
            const OH: usize,
            const OW: usize,
            G: Conv3dGeometry,
            R: Traceable<Elem = T, Shape = Rank5<C_OUT, C_IN_G, KD, KH, KW>, Device = D>,
        >(
            &self,
            weight: &R,
            conv: G,
        ) -> Traced<T, Rank5<N, C_OUT, OD, OH, OW>, D> {
            #[rustfmt::skip]
            let () = Conv3dFits::<G, Rank5<N, C, DP, H, W>, Rank5<C_OUT, C_IN_G, KD, KH, KW>, Rank3<OD, OH, OW>>::OK;
            let weight = weight.traced();
            let value = self.value.conv3d(&weight.value, conv);
            let captured = (
                [self.slot(), weight.slot()],
                [self.value.padded(), weight.value.padded()],
                G::PARAMS_3D,
            );
            record_with(
                value,
                &[&self.node, &weight.node],
                captured,
                conv3d_rule::<T, D>,
            )
        }
    }
}
