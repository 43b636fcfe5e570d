//! Convolution, pooling and nearest-neighbour upsampling (the gradients come from `grad.rs`, built on the forward
//! kernels). The backward rules are `fn`s over padded values, which they view as the runtime NCHW tensors the
//! gradient kernels take: each is compiled once per element type and device, whatever the layer's sizes.

use super::geometry::ConvFits;
use super::grad::Dyn4;
use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
use crate::dtype::FloatDType;
use crate::ops::Conv2dParams;
use crate::ops::Device;
use crate::shape::{Rank3, Rank4, Shape};
use crate::tensor::{ConvGeometry, Grad, Tensor};

/// A padded rank-4 value as the runtime NCHW tensor it holds (a view).
fn nchw<T: FloatDType, D: Device>(t: &Grad<T, D>) -> Tensor<T, Dyn4, D> {
    let d = t.dims();
    t.unpadded((d[2], d[3], d[4], d[5]))
}

/// A padded rank-3 `(N, C, L)` value as the NCHW tensor `(N, C, 1, L)` a 1-D convolution is computed as.
fn ncl_as_nchw<T: FloatDType, D: Device>(t: &Grad<T, D>) -> Tensor<T, Dyn4, D> {
    let d = t.dims();
    t.relabel((d[3], d[4], 1, d[5]))
}

/// What a convolution's rule keeps: the input's and the weight's slots, the input and the weight (padded), and
/// the parameters.
pub(super) type ConvCaptured<T, D> = ([Slot; 2], [Grad<T, D>; 2], Conv2dParams);

/// Records a convolution-family op whose `value` was computed from `x` and `weight` with `p`; `rule` gives
/// both gradients from the saved input and weight.
pub(super) fn record_conv<T: FloatDType, D: Device, SX: Shape, SW: Shape, SO: Shape>(
    x: &Traced<T, SX, D>,
    weight: &Traced<T, SW, D>,
    value: Tensor<T, SO, D>,
    p: Conv2dParams,
    rule: fn(Grad<T, D>, ConvCaptured<T, D>, &mut Gradients),
) -> Traced<T, SO, D> {
    let saved = [x.value.padded(), weight.value.padded()];
    let captured = ([x.slot(), weight.slot()], saved, p);
    record_with(value, &[&x.node, &weight.node], captured, rule)
}

/// conv2d's gradients: the transposed convolution of the output's gradient for the input, the weight-gradient
/// kernel for the weight.
pub(super) fn conv2d_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sx, sw], [x, w], p): ConvCaptured<T, D>,
    store: &mut Gradients,
) {
    let (g, x, w) = (nchw(&g), nchw(&x), nchw(&w));
    sx.give_padded_with(store, || g.conv2d_input_grad(&w, p, x.shape()).padded());
    sw.give_padded_with(store, || x.conv2d_weight_grad(&g, p, w.shape()).padded());
}

/// conv_transpose2d's gradients: the conv2d of the output's gradient for the input, the conv2d weight gradient
/// with the roles of input and output exchanged for the weight.
pub(super) fn conv_transpose2d_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sx, sw], [x, w], p): ConvCaptured<T, D>,
    store: &mut Gradients,
) {
    let (g, x, w) = (nchw(&g), nchw(&x), nchw(&w));
    sx.give_padded_with(store, || {
        g.conv_transpose2d_input_grad(&w, p, x.shape()).padded()
    });
    sw.give_padded_with(store, || {
        g.conv_transpose2d_weight_grad(&x, p, w.shape()).padded()
    });
}

/// conv1d's gradients, as those of the conv2d of height 1 it is, relabelled back to rank 3.
fn conv1d_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sx, sw], [x, w], p): ConvCaptured<T, D>,
    store: &mut Gradients,
) {
    let (g4, x4, w4) = (ncl_as_nchw(&g), ncl_as_nchw(&x), ncl_as_nchw(&w));
    let rank3 = |t: Tensor<T, Dyn4, D>| {
        let (n, c, _, l) = t.shape();
        t.relabel((n, c, l)).padded()
    };
    sx.give_padded_with(store, || rank3(g4.conv2d_input_grad(&w4, p, x4.shape())));
    sw.give_padded_with(store, || rank3(x4.conv2d_weight_grad(&g4, p, w4.shape())));
}

/// conv_transpose1d's gradients, as those of the transposed conv2d of height 1 it is, relabelled back to rank 3.
fn conv_transpose1d_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sx, sw], [x, w], p): ConvCaptured<T, D>,
    store: &mut Gradients,
) {
    let (g4, x4, w4) = (ncl_as_nchw(&g), ncl_as_nchw(&x), ncl_as_nchw(&w));
    let rank3 = |t: Tensor<T, Dyn4, D>| {
        let (n, c, _, l) = t.shape();
        t.relabel((n, c, l)).padded()
    };
    sx.give_padded_with(store, || {
        rank3(g4.conv_transpose2d_input_grad(&w4, p, x4.shape()))
    });
    sw.give_padded_with(store, || {
        rank3(g4.conv_transpose2d_weight_grad(&x4, p, w4.shape()))
    });
}

/// upsample_nearest2d's gradient, for an input of dims `input` upsampled by `factor`: each input pixel sums its
/// block.
fn upsample_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, input, factor): (Slot, Dyn4, usize),
    store: &mut Gradients,
) {
    let grad = nchw(&g).upsample_nearest2d_grad(input, factor);
    slot.give_padded(store, grad.padded());
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Traced<T, Rank4<N, C, H, W>, D>
{
    /// 2-D convolution (see [`Tensor::conv2d`]); gradients for the input and the weight.
    #[allow(clippy::type_complexity)]
    pub fn conv2d<
        const C_OUT: usize,
        const C_IN_G: usize,
        const KH: usize,
        const KW: usize,
        const OH: usize,
        const OW: usize,
        G: ConvGeometry,
        R: Traceable<Elem = T, Shape = Rank4<C_OUT, C_IN_G, KH, KW>, Device = D>,
    >(
        &self,
        weight: &R,
        conv: G,
    ) -> Traced<T, Rank4<N, C_OUT, OH, OW>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank4<N, C, H, W>, Rank4<C_OUT, C_IN_G, KH, KW>, Rank4<N, C_OUT, OH, OW>, false>::OK;
        let weight = weight.traced();
        let value = self.value.conv2d(&weight.value, conv);
        let p = G::PARAMS;
        record_conv(self, &weight, value, p, conv2d_rule::<T, D>)
    }

    /// Transposed 2-D convolution (see [`Tensor::conv_transpose2d`]): its input gradient is the conv2d of the
    /// output's gradient, its weight gradient the conv2d weight gradient with the roles of input and output
    /// exchanged.
    #[allow(clippy::type_complexity)]
    pub fn conv_transpose2d<
        const C_OUT_G: usize,
        const KH: usize,
        const KW: usize,
        const C_OUT: usize,
        const OH: usize,
        const OW: usize,
        G: ConvGeometry,
        R: Traceable<Elem = T, Shape = Rank4<C, C_OUT_G, KH, KW>, Device = D>,
    >(
        &self,
        weight: &R,
        conv: G,
    ) -> Traced<T, Rank4<N, C_OUT, OH, OW>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank4<N, C, H, W>, Rank4<C, C_OUT_G, KH, KW>, Rank4<N, C_OUT, OH, OW>, true>::OK;
        let weight = weight.traced();
        let value = self.value.conv_transpose2d(&weight.value, conv);
        let p = G::PARAMS;
        record_conv(self, &weight, value, p, conv_transpose2d_rule::<T, D>)
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Traced<T, Rank4<N, C, H, W>, D>
{
    /// Nearest-neighbour upsampling by an integer factor (see [`Tensor::upsample_nearest2d`]); each input pixel's
    /// gradient sums its block.
    pub fn upsample_nearest2d<const OH: usize, const OW: usize>(
        &self,
    ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
        let () = super::tensor::UpsampleFits::<H, W, OH, OW>::OK;
        let captured = (self.slot(), (N, C, H, W), OH / H);
        record_with(
            self.value.upsample_nearest2d::<OH, OW>(),
            &[&self.node],
            captured,
            upsample_rule::<T, D>,
        )
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
    Traced<T, Rank3<N, C, L>, D>
{
    /// 1-D convolution (see [`Tensor::conv1d`]), differentiated as the conv2d of height 1 it is.
    #[allow(clippy::type_complexity)]
    pub fn conv1d<
        const C_OUT: usize,
        const C_IN_G: usize,
        const K: usize,
        const OL: usize,
        G: super::Conv1dGeometry,
        R: Traceable<Elem = T, Shape = Rank3<C_OUT, C_IN_G, K>, Device = D>,
    >(
        &self,
        weight: &R,
        conv: G,
    ) -> Traced<T, Rank3<N, C_OUT, OL>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank3<N, C, L>, Rank3<C_OUT, C_IN_G, K>, Rank3<N, C_OUT, OL>, false>::OK;
        let weight = weight.traced();
        let value = self.value.conv1d(&weight.value, conv);
        let p = super::geometry::along_length(G::PARAMS);
        record_conv(self, &weight, value, p, conv1d_rule::<T, D>)
    }

    /// Transposed 1-D convolution (see [`Tensor::conv_transpose1d`]); gradients for the input and the weight.
    pub fn conv_transpose1d<
        const C_OUT_G: usize,
        const K: usize,
        const C_OUT: usize,
        const OL: usize,
        G: super::Conv1dGeometry,
        R: Traceable<Elem = T, Shape = Rank3<C, C_OUT_G, K>, Device = D>,
    >(
        &self,
        weight: &R,
        conv: G,
    ) -> Traced<T, Rank3<N, C_OUT, OL>, D> {
        #[rustfmt::skip]
        let () = ConvFits::<G, Rank3<N, C, L>, Rank3<C, C_OUT_G, K>, Rank3<N, C_OUT, OL>, true>::OK;
        let weight = weight.traced();
        let value = self.value.conv_transpose1d(&weight.value, conv);
        let p = super::geometry::along_length(G::PARAMS);
        record_conv(self, &weight, value, p, conv_transpose1d_rule::<T, D>)
    }
}
