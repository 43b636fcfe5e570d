//! `unfold` and `fold` (PyTorch's `F.unfold`/`F.fold`, im2col and col2im as public ops): the sliding
//! `KH x KW` patches of each channel as columns, and their sum back into an image. Both are depthwise
//! convolutions with one-hot kernels (channel `c` gets `KH * KW` output channels, one per tap), so every device
//! runs them with its convolution kernels (`KH * KW` multiply-adds per copied value) and the gradients are the
//! convolutions'. The columns keep their spatial layout, `(N, C KH KW, OH, OW)`; `.reshape()` gives PyTorch's
//! `(N, C KH KW, L)`.

use super::tensor::{convolve, fits_hw, transposed_fits_hw, ConvGeometry, Direction};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::ops::Conv2dParams;
use crate::shape::Rank4;
use crate::tensor::Tensor;

/// The `(C KH KW, 1, KH, KW)` one-hot kernels: output channel `(c KH + i) KW + j` picks tap `(i, j)`.
fn one_hot_taps<T: FloatDType, D: Device, const CK: usize, const KH: usize, const KW: usize>(
) -> Tensor<T, Rank4<CK, 1, KH, KW>, D> {
    let mut fill = |w: &mut [T]| {
        for (k, x) in w.iter_mut().enumerate() {
            // Element k of kernel r = k / (KH KW) is tap k % (KH KW); it is one where that tap is r's own.
            *x = if k / (KH * KW) % (KH * KW) == k % (KH * KW) {
                T::ONE
            } else {
                T::ZERO
            };
        }
    };
    Tensor::filled_with("unfold", Default::default(), &mut fill)
}

/// `G`'s parameters as a depthwise convolution over `channels` (unfold takes no groups of its own).
const fn depthwise(p: Conv2dParams, channels: usize) -> Conv2dParams {
    Conv2dParams {
        groups: channels,
        output_padding: [0, 0],
        ..p
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// The `KH x KW` patches of every channel as `C KH KW` channels of an `(OH, OW)` grid (PyTorch's
    /// `F.unfold` before its last reshape): channel `(c KH + i) KW + j` at `(y, x)` is the input at
    /// `(c, y sh + i dh - ph, x sw + j dw - pw)`, zero in the padding. The geometry's groups must be 1; the
    /// sizes are checked at build time.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let x: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = Tensor::arange();
    /// let cols: Tensor<f32, Rank4<1, 4, 2, 2>, Cpu> = x.unfold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
    /// assert_eq!(cols.to_array()[0][0], [[0., 1.], [3., 4.]]); // tap (0, 0) of each 2x2 window
    /// assert_eq!(cols.to_array()[0][3], [[4., 5.], [7., 8.]]); // tap (1, 1)
    /// ```
    pub fn unfold<
        const KH: usize,
        const KW: usize,
        const CK: usize,
        const OH: usize,
        const OW: usize,
        G: ConvGeometry,
    >(
        &self,
        _geometry: G,
    ) -> Tensor<T, Rank4<N, CK, OH, OW>, D> {
        const { check_unfold::<C, H, W, KH, KW, CK, OH, OW>(G::PARAMS) };
        let weight = one_hot_taps::<T, D, CK, KH, KW>();
        convolve(
            "unfold",
            self,
            &weight,
            depthwise(G::PARAMS, C),
            Direction::Forward,
        )
    }
}

impl<
        T: FloatDType,
        const N: usize,
        const CK: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
    > Tensor<T, Rank4<N, CK, OH, OW>, D>
{
    /// The inverse arrangement of [`Self::unfold`] (PyTorch's `F.fold`): the columns' values summed back into a
    /// `(N, C, H, W)` image, each pixel collecting every patch that covered it. `H` and `W` must be the sizes
    /// whose unfolding gives `(OH, OW)` exactly (every input row and column reached by a window).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let ones = Tensor::<f32, Rank4<1, 4, 2, 2>, Cpu>::ones();
    /// let counts: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = ones.fold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
    /// assert_eq!(counts.to_array()[0][0], [[1., 2., 1.], [2., 4., 2.], [1., 2., 1.]]); // patches per pixel
    /// ```
    pub fn fold<
        const KH: usize,
        const KW: usize,
        const C: usize,
        const H: usize,
        const W: usize,
        G: ConvGeometry,
    >(
        &self,
        _geometry: G,
    ) -> Tensor<T, Rank4<N, C, H, W>, D> {
        const {
            check_unfold::<C, H, W, KH, KW, CK, OH, OW>(G::PARAMS);
            check_fold::<H, W, KH, KW, OH, OW>(G::PARAMS);
        };
        let weight = one_hot_taps::<T, D, CK, KH, KW>();
        convolve(
            "fold",
            self,
            &weight,
            depthwise(G::PARAMS, C),
            Direction::Transposed,
        )
    }
}

/// The build-time rules of unfold: groups 1, `CK = C KH KW`, and `(OH, OW)` the window arithmetic's.
const fn check_unfold<
    const C: usize,
    const H: usize,
    const W: usize,
    const KH: usize,
    const KW: usize,
    const CK: usize,
    const OH: usize,
    const OW: usize,
>(
    p: Conv2dParams,
) {
    assert!(
        p.groups == 1,
        "unfold/fold: the geometry's groups must be 1"
    );
    assert!(
        CK == C * KH * KW,
        "unfold/fold: the columns must have C KH KW channels"
    );
    assert!(
        fits_hw(&p, [H, W], [KH, KW], [OH, OW]),
        "unfold/fold: the grid must be (size + padding before + padding after - dilation (kernel - 1) - 1) / stride + 1 per axis"
    );
}

/// fold's extra rule: the image is exactly what the windows cover (no rows or columns left over by the stride).
const fn check_fold<
    const H: usize,
    const W: usize,
    const KH: usize,
    const KW: usize,
    const OH: usize,
    const OW: usize,
>(
    p: Conv2dParams,
) {
    assert!(
        transposed_fits_hw(&p, [OH, OW], [KH, KW], [H, W]),
        "fold: the image must be exactly covered by the windows: (grid - 1) stride - padding before - padding after + dilation (kernel - 1) + 1"
    );
}

#[cfg(feature = "std")]
mod traced {
    use super::super::traced as conv_traced;
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
        /// See [`Tensor::unfold`]; the gradient sums the columns back (a fold).
        pub fn unfold<
            const KH: usize,
            const KW: usize,
            const CK: usize,
            const OH: usize,
            const OW: usize,
            G: ConvGeometry,
        >(
            &self,
            geometry: G,
        ) -> Traced<T, Rank4<N, CK, OH, OW>, D> {
            let value = self.value().unfold::<KH, KW, CK, OH, OW, G>(geometry);
            let weight = Traced::constant(one_hot_taps::<T, D, CK, KH, KW>());
            let p = depthwise(G::PARAMS, C);
            conv_traced::record_conv(self, &weight, value, p, conv_traced::conv2d_rule::<T, D>)
        }
    }

    impl<
            T: FloatDType,
            const N: usize,
            const CK: usize,
            const OH: usize,
            const OW: usize,
            D: Device,
        > Traced<T, Rank4<N, CK, OH, OW>, D>
    {
        /// See [`Tensor::fold`]; the gradient unfolds.
        pub fn fold<
            const KH: usize,
            const KW: usize,
            const C: usize,
            const H: usize,
            const W: usize,
            G: ConvGeometry,
        >(
            &self,
            geometry: G,
        ) -> Traced<T, Rank4<N, C, H, W>, D> {
            let value = self.value().fold::<KH, KW, C, H, W, G>(geometry);
            let weight = Traced::constant(one_hot_taps::<T, D, CK, KH, KW>());
            let p = depthwise(G::PARAMS, C);
            conv_traced::record_conv(
                self,
                &weight,
                value,
                p,
                conv_traced::conv_transpose2d_rule::<T, D>,
            )
        }
    }
}
