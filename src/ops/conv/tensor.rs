//! Convolution on NCHW tensors, with the hyper-parameters as const generics carried by a small value
//! (`Conv::<STRIDE, PADDING, DILATION, GROUPS>` and the other geometries of `geometry.rs`), so every shape is
//! inferred from the operands and the annotated output, and a `const` assertion checks the output size:
//! `(size + 2 padding - dilation (kernel - 1) - 1) / stride + 1`.
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::tensor::{Conv, Pool2d};
//! let x: Tensor<f32, Rank4<1, 1, 4, 4>, Cpu> = Tensor::arange();
//! let w = Tensor::<f32, Rank4<1, 1, 3, 3>, Cpu>::ones();
//! let y: Tensor<f32, Rank4<1, 1, 4, 4>, Cpu> = x.conv2d(&w, Conv::<1, 1, 1, 1>); // "same" padding
//! assert_eq!(y.to_array()[0][0][0], [10., 18., 24., 18.]);
//! let p: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>);
//! assert_eq!(p.to_array()[0][0], [[5., 7.], [13., 15.]]);
//! // conv1d of the column [0, 4, 8, 12] with [1, 1, 1], stride 2, padding 1: windows [0, 0, 4] and [4, 8, 12].
//! let s: Tensor<f32, Rank3<1, 1, 2>, Cpu> = x.i((.., .., .., 0)).conv1d(&w.i((.., .., 1)), Conv::<2, 1, 1, 1>);
//! assert_eq!(s.to_array()[0][0], [4., 24.]);
//! ```

use super::geometry::{along_length, Conv1dGeometry, ConvFits, ConvGeometry};
use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::Conv2dParams;
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{ConstShape, Rank3, Rank4, Shape};
use crate::tensor::Tensor;
use crate::tensor::{call, written};

/// Which kernel [`convolve`] runs.
#[derive(Clone, Copy)]
pub(super) enum Direction {
    /// The convolution (cross-correlation).
    Forward,
    /// The transposed convolution (the convolution's input gradient).
    Transposed,
}

/// `x` convolved by `w` with `params` (or the transposed convolution) into a fresh tensor of the output type: the
/// one kernel call behind conv2d, conv_transpose2d, their 1-D forms (height-1 images) and unfold/fold.
pub(super) fn convolve<T: FloatDType, D: Device, SX: Shape, SW: Shape, SO: ConstShape>(
    op: &'static str,
    x: &Tensor<T, SX, D>,
    w: &Tensor<T, SW, D>,
    params: Conv2dParams,
    direction: Direction,
) -> Tensor<T, SO, D> {
    let (lx, lw) = (x.layout(), w.layout());
    convolve_views(op, (x.buffer(), &lx), (w.buffer(), &lw), params, direction)
}

/// [`convolve`] of rank-4 views (`conv3d`'s depth slices).
pub(super) fn convolve_views<T: FloatDType, D: Device, SO: ConstShape>(
    op: &'static str,
    x: (&D::Buffer<T>, &Layout),
    w: (&D::Buffer<T>, &Layout),
    params: Conv2dParams,
    direction: Direction,
) -> Tensor<T, SO, D> {
    match direction {
        Direction::Forward => written!(
            Tensor::written_by,
            Default::default(),
            op,
            call::conv2d::<T, D>(x, w, params),
        ),
        Direction::Transposed => written!(
            Tensor::written_by,
            Default::default(),
            op,
            call::conv_transpose2d::<T, D>(x, w, params),
        ),
    }
}

/// The build-time rule of `upsample_nearest2d` from `(H, W)` to `(OH, OW)`: one integer factor on both axes. An
/// associated `const`, named by the tensor method and its traced twin, so a mistake is one error at the user's
/// call.
pub(super) struct UpsampleFits<const H: usize, const W: usize, const OH: usize, const OW: usize>;

impl<const H: usize, const W: usize, const OH: usize, const OW: usize> UpsampleFits<H, W, OH, OW> {
    pub(super) const OK: () =
        if !(H > 0 && W > 0 && OH % H == 0 && OW % W == 0 && OH / H == OW / W && OH >= H) {
            let (oh, ow, h, w) = (n(OH), n(OW), n(H), n(W));
            let why = [
                t("the output ("),
                oh,
                t(", "),
                ow,
                t(") must be the input ("),
                h,
                t(", "),
                w,
            ];
            let example = [
                t(") scaled by one integer factor, as ("),
                n(2 * H),
                t(", "),
                n(2 * W),
                t(")"),
            ];
            size_check::concat_panic(&[&[t("upsample_nearest2d: ")], &why, &example]);
        };
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// 2-D convolution (cross-correlation, as in PyTorch) with a `(C_OUT, C / GROUPS, KH, KW)` weight.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let x = Tensor::<f32, Rank4<1, 3, 8, 8>, Cpu>::ones();
    /// let w = Tensor::<f32, Rank4<4, 3, 3, 3>, Cpu>::ones();
    /// // (8 + 2·1 - 3) / 1 + 1 = 8: padding 1 keeps the size.
    /// let y: Tensor<f32, Rank4<1, 4, 8, 8>, Cpu> = x.conv2d(&w, Conv::<1, 1, 1, 1>);
    /// assert_eq!(y.to_array()[0][0][1][1], 27.); // a full 3x3x3 window of ones
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::conv_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let x = Tensor::<f32, Rank4<1, 3, 8, 8>, Cpu>::ones();
    /// let w = Tensor::<f32, Rank4<4, 3, 3, 3>, Cpu>::ones();
    /// // Without padding the output is (8 - 3) / 1 + 1 = 6: "conv2d: output height (8 + 2·0 − 3) / 1 + 1 = 6, but
    /// // the output type says 8".
    /// let y: Tensor<f32, Rank4<1, 4, 8, 8>, Cpu> = x.conv2d(&w, Conv::<1, 0, 1, 1>);
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn conv2d<
        const C_OUT: usize,
        const C_IN_G: usize,
        const KH: usize,
        const KW: usize,
        const OH: usize,
        const OW: usize,
        G: ConvGeometry,
    >(
        &self,
        weight: &Tensor<T, Rank4<C_OUT, C_IN_G, KH, KW>, D>,
        _params: G,
    ) -> Tensor<T, Rank4<N, C_OUT, OH, OW>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank4<N, C, H, W>, Rank4<C_OUT, C_IN_G, KH, KW>, Rank4<N, C_OUT, OH, OW>, false>::OK;
        convolve("conv2d", self, weight, G::PARAMS, Direction::Forward)
    }

    /// Transposed 2-D convolution (PyTorch's `conv_transpose2d`) with a `(C, C_OUT / GROUPS, KH, KW)` weight:
    /// `OH = (H - 1) STRIDE - 2 PADDING + DILATION (KH - 1) + 1 + OUTPUT_PADDING` (output padding through
    /// [`ConvGeometry::output_padding`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let x = Tensor::<f32, Rank4<1, 2, 4, 4>, Cpu>::ones();
    /// let w = Tensor::<f32, Rank4<2, 3, 2, 2>, Cpu>::ones(); // (C, C_OUT, KH, KW)
    /// // (4 - 1)·2 - 2·0 + (2 - 1) + 1 = 8: stride 2 doubles the size.
    /// let y: Tensor<f32, Rank4<1, 3, 8, 8>, Cpu> = x.conv_transpose2d(&w, Conv::<2, 0, 1, 1>);
    /// assert_eq!(y.to_array()[0][0][0][0], 2.); // one tap from each input channel
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::conv_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let x = Tensor::<f32, Rank4<1, 2, 4, 4>, Cpu>::ones();
    /// let w = Tensor::<f32, Rank4<2, 3, 2, 2>, Cpu>::ones();
    /// // Stride 2 doubles 4 to 8, not 9.
    /// let y: Tensor<f32, Rank4<1, 3, 9, 9>, Cpu> = x.conv_transpose2d(&w, Conv::<2, 0, 1, 1>);
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn conv_transpose2d<
        const C_OUT_G: usize,
        const KH: usize,
        const KW: usize,
        const C_OUT: usize,
        const OH: usize,
        const OW: usize,
        G: ConvGeometry,
    >(
        &self,
        weight: &Tensor<T, Rank4<C, C_OUT_G, KH, KW>, D>,
        _params: G,
    ) -> Tensor<T, Rank4<N, C_OUT, OH, OW>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank4<N, C, H, W>, Rank4<C, C_OUT_G, KH, KW>, Rank4<N, C_OUT, OH, OW>, true>::OK;
        convolve(
            "conv_transpose2d",
            self,
            weight,
            G::PARAMS,
            Direction::Transposed,
        )
    }

    /// Nearest-neighbour upsampling by the integer factor `OH / H` (= `OW / W`): each pixel becomes a block. Runs
    /// as a broadcast view copied once, so it works on every device with a strided copy.
    pub fn upsample_nearest2d<const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        let () = UpsampleFits::<H, W, OH, OW>::OK;
        let f = OH / H;
        let parts = self.view_parts();
        let s = parts.as_ref();
        // (N, C, H, f, W, f) with stride 0 on the repeat axes, then one dense copy reads as (N, C, OH, OW).
        let view = crate::layout::Layout::from_parts(
            crate::shape::Dims::from_slice(&[N, C, H, f, W, f]),
            &[s[0], s[1], s[2], 0, s[3], 0],
            self.offset(),
        );
        let src = (self.buffer(), &view);
        written!(
            Tensor::written_by,
            Default::default(),
            "upsample_nearest2d",
            call::copy::<T, D>(src),
        )
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
    Tensor<T, Rank3<N, C, L>, D>
{
    /// 1-D convolution of an `(N, C, L)` input with a `(C_OUT, C / GROUPS, K)` weight (a 2-D convolution of
    /// height 1, padded along the length only). The geometry is a [`Conv`](super::Conv), refined by
    /// [`ConvGeometry::asymmetric_padding`] with the same `BEGIN, END` on both axes; the length takes its width
    /// part: `OL = (L + padding before + padding after - dilation (K - 1) - 1) / stride + 1`.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Conv, ConvGeometry};
    /// let x = Tensor::<f32, _, Cpu>::from_array([[[1., 2., 3.]]]); // (1, 1, 3)
    /// let w = Tensor::<f32, _, Cpu>::from_array([[[1., 10.]]]); // (1, 1, 2)
    /// let y: Tensor<f32, Rank3<1, 1, 2>, Cpu> = x.conv1d(&w, Conv::<1, 0, 1, 1>);
    /// assert_eq!(y.to_array()[0][0], [21., 32.]);
    /// // Two zeros before the sequence, none after (a causal convolution keeps the length).
    /// let c: Tensor<f32, Rank3<1, 1, 4>, Cpu> =
    ///     x.conv1d(&w, Conv::<1, 0, 1, 1>.asymmetric_padding::<2, 0, 2, 0>());
    /// assert_eq!(c.to_array()[0][0], [0., 10., 21., 32.]);
    /// ```
    pub fn conv1d<
        const C_OUT: usize,
        const C_IN_G: usize,
        const K: usize,
        const OL: usize,
        G: Conv1dGeometry,
    >(
        &self,
        weight: &Tensor<T, Rank3<C_OUT, C_IN_G, K>, D>,
        _params: G,
    ) -> Tensor<T, Rank3<N, C_OUT, OL>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank3<N, C, L>, Rank3<C_OUT, C_IN_G, K>, Rank3<N, C_OUT, OL>, false>::OK;
        let x = self.unsqueeze::<crate::shape::Axis<2>>();
        let w = weight.unsqueeze::<crate::shape::Axis<2>>();
        convolve(
            "conv1d",
            &x,
            &w,
            along_length(G::PARAMS),
            Direction::Forward,
        )
    }

    /// Transposed 1-D convolution with a `(C, C_OUT / GROUPS, K)` weight (PyTorch's `conv_transpose1d`):
    /// `OL = (L - 1) STRIDE - 2 PADDING + DILATION (K - 1) + 1 + OUTPUT_PADDING`, a transposed 2-D convolution of
    /// height 1. The geometry is a [`Conv`](super::Conv), refined like [`Tensor::conv1d`]'s or by
    /// [`ConvGeometry::output_padding`] with the same value on both axes.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Conv, ConvGeometry};
    /// let x = Tensor::<f32, _, Cpu>::from_array([[[1., 2.]]]); // (1, 1, 2)
    /// let w = Tensor::<f32, _, Cpu>::from_array([[[1., 1., 1.]]]); // (1, 1, 3)
    /// let y: Tensor<f32, Rank3<1, 1, 5>, Cpu> = x.conv_transpose1d(&w, Conv::<2, 0, 1, 1>);
    /// assert_eq!(y.to_array()[0][0], [1., 1., 3., 2., 2.]);
    /// // Stride 2, padding 1: length 3, or 4 with output padding 1 (what the last window past it adds).
    /// let z: Tensor<f32, Rank3<1, 1, 4>, Cpu> =
    ///     x.conv_transpose1d(&w, Conv::<2, 1, 1, 1>.output_padding::<1, 1>());
    /// assert_eq!(z.to_array()[0][0], [1., 3., 2., 2.]);
    /// ```
    pub fn conv_transpose1d<
        const C_OUT_G: usize,
        const K: usize,
        const C_OUT: usize,
        const OL: usize,
        G: Conv1dGeometry,
    >(
        &self,
        weight: &Tensor<T, Rank3<C, C_OUT_G, K>, D>,
        _params: G,
    ) -> Tensor<T, Rank3<N, C_OUT, OL>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank3<N, C, L>, Rank3<C, C_OUT_G, K>, Rank3<N, C_OUT, OL>, true>::OK;
        let x = self.unsqueeze::<crate::shape::Axis<2>>();
        let w = weight.unsqueeze::<crate::shape::Axis<2>>();
        convolve(
            "conv_transpose1d",
            &x,
            &w,
            along_length(G::PARAMS),
            Direction::Transposed,
        )
    }
}
