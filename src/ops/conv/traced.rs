//! Convolution, pooling and nearest-neighbour upsampling (the gradients come from `grad.rs`, built on the forward kernels).

use crate::autograd::{Traceable, Traced};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::ops::Conv2dParams;
use crate::shape::{Rank3, Rank4};
use crate::tensor::{Conv, Pool2d, Tensor};

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
        const STRIDE: usize,
        const PADDING: usize,
        const DILATION: usize,
        const GROUPS: usize,
        R: Traceable<Elem = T, Shape = Rank4<C_OUT, C_IN_G, KH, KW>, Device = D>,
    >(
        &self,
        weight: &R,
        conv: Conv<STRIDE, PADDING, DILATION, GROUPS>,
    ) -> Traced<T, Rank4<N, C_OUT, OH, OW>, D> {
        let weight = weight.traced();
        let value = self.value.conv2d(&weight.value, conv);
        let p = Conv::<STRIDE, PADDING, DILATION, GROUPS>::PARAMS;
        let (sx, sw) = (self.slot(), weight.slot());
        let (x, w) = (self.value.clone(), weight.value.clone());
        Self::record(value, &[&self.node, &weight.node], move |g, grads| {
            sx.give(grads, || {
                g.conv2d_input_grad(&w, p, (N, C, H, W))
                    .relabel::<Rank4<N, C, H, W>>(Default::default())
            });
            sw.give(grads, || {
                x.conv2d_weight_grad(&g, p, (C_OUT, C_IN_G, KH, KW))
                    .relabel::<Rank4<C_OUT, C_IN_G, KH, KW>>(Default::default())
            });
        })
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
        const STRIDE: usize,
        const PADDING: usize,
        const DILATION: usize,
        const GROUPS: usize,
        R: Traceable<Elem = T, Shape = Rank4<C, C_OUT_G, KH, KW>, Device = D>,
    >(
        &self,
        weight: &R,
        conv: Conv<STRIDE, PADDING, DILATION, GROUPS>,
    ) -> Traced<T, Rank4<N, C_OUT, OH, OW>, D> {
        let weight = weight.traced();
        let value = self.value.conv_transpose2d(&weight.value, conv);
        let p = Conv::<STRIDE, PADDING, DILATION, GROUPS>::PARAMS;
        let (sx, sw) = (self.slot(), weight.slot());
        let (x, w) = (self.value.clone(), weight.value.clone());
        Self::record(value, &[&self.node, &weight.node], move |g, grads| {
            sx.give(grads, || {
                g.conv2d_dyn(&w, p)
                    .relabel::<Rank4<N, C, H, W>>(Default::default())
            });
            sw.give(grads, || {
                g.conv2d_weight_grad(&x, p, (C, C_OUT_G, KH, KW))
                    .relabel::<Rank4<C, C_OUT_G, KH, KW>>(Default::default())
            });
        })
    }

    /// Max pooling (see [`Tensor::max_pool2d`]); the gradient goes to every position holding its window's
    /// maximum.
    pub fn max_pool2d<
        const OH: usize,
        const OW: usize,
        const KERNEL: usize,
        const STRIDE: usize,
        const PADDING: usize,
    >(
        &self,
        window: Pool2d<KERNEL, STRIDE, PADDING>,
    ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
        let y = self.value.max_pool2d(window);
        let (x, out) = (self.value.clone(), y.clone());
        self.unary_op(y, move |g| {
            let p = Conv::<STRIDE, PADDING, 1, 1>::PARAMS;
            x.max_pool2d_grad(&out, &g, KERNEL, p)
                .relabel(Default::default())
        })
    }

    /// Average pooling (see [`Tensor::avg_pool2d`]).
    pub fn avg_pool2d<
        const OH: usize,
        const OW: usize,
        const KERNEL: usize,
        const STRIDE: usize,
        const PADDING: usize,
    >(
        &self,
        window: Pool2d<KERNEL, STRIDE, PADDING>,
    ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
        self.unary_op(self.value.avg_pool2d(window), move |g| {
            let p = Conv::<STRIDE, PADDING, 1, 1>::PARAMS;
            g.avg_pool2d_grad(KERNEL, p, (N, C, H, W))
                .relabel(Default::default())
        })
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
        self.unary_op(self.value.upsample_nearest2d::<OH, OW>(), move |g| {
            g.upsample_nearest2d_grad((N, C, H, W), OH / H)
                .relabel::<Rank4<N, C, H, W>>(Default::default())
        })
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
        const STRIDE: usize,
        const PADDING: usize,
        const DILATION: usize,
        const GROUPS: usize,
        R: Traceable<Elem = T, Shape = Rank3<C_OUT, C_IN_G, K>, Device = D>,
    >(
        &self,
        weight: &R,
        conv: Conv<STRIDE, PADDING, DILATION, GROUPS>,
    ) -> Traced<T, Rank3<N, C_OUT, OL>, D> {
        let weight = weight.traced();
        let value = self.value.conv1d(&weight.value, conv);
        let p = Conv2dParams {
            stride: [1, STRIDE],
            padding: [0, PADDING],
            dilation: [1, DILATION],
            groups: GROUPS,
        };
        let (sx, sw) = (self.slot(), weight.slot());
        let (x, w) = (self.value.clone(), weight.value.clone());
        Self::record(
            value,
            &[&self.node, &weight.node],
            move |g: Tensor<T, Rank3<N, C_OUT, OL>, D>, grads| {
                let g4 = g.relabel((N, C_OUT, 1, OL));
                sx.give(grads, || {
                    let w4 = w.relabel((C_OUT, C_IN_G, 1, K));
                    g4.conv2d_input_grad(&w4, p, (N, C, 1, L))
                        .relabel::<Rank3<N, C, L>>(Default::default())
                });
                sw.give(grads, || {
                    let x4 = x.relabel((N, C, 1, L));
                    x4.conv2d_weight_grad(&g4, p, (C_OUT, C_IN_G, 1, K))
                        .relabel::<Rank3<C_OUT, C_IN_G, K>>(Default::default())
                });
            },
        )
    }
}
