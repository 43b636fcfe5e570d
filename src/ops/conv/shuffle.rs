//! Pixel shuffle and unshuffle (PyTorch's `pixel_shuffle`/`pixel_unshuffle`): channels `C * R * R` traded for an
//! `R`-times larger image and back. Each is a reshape to rank 6, a permutation and a reshape back (one copy), so
//! every device runs it and the gradient is the inverse rearrangement. The factor `R` is named; the other sizes
//! come from the output type (`_` lets the compiler infer them) and are checked at build time.

use crate::dtype::WithDType;
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{Axis, Rank4, Rank6};
use crate::tensor::Tensor;

/// `(N, C, R, R, H, W) -> (N, C, H, R, W, R)`: the shuffle's permutation.
type Shuffle = (Axis<0>, Axis<1>, Axis<4>, Axis<2>, Axis<5>, Axis<3>);
/// `(N, C, H, R, W, R) -> (N, C, R, R, H, W)`: the unshuffle's.
type Unshuffle = (Axis<0>, Axis<1>, Axis<3>, Axis<5>, Axis<2>, Axis<4>);

/// The build-time rule of a shuffle (`shuffle`) of `(N, C, H, W)` into `(N, CO, OH, OW)` by `R`, or of an
/// unshuffle: `C = CO R^2` and `OH = H R` (shuffle), `CO = C R^2` and `H = OH R` (unshuffle). The reshapes
/// that follow use runtime-checked forms, so a mistake is reported once, here.
const fn check_shuffle(
    op: &str,
    shuffle: bool,
    r: usize,
    [c, h, w]: [usize; 3],
    [co, oh, ow]: [usize; 3],
) {
    if r == 0 {
        size_check::fail(op, &[t("R must be at least 1")]);
    }
    if shuffle {
        if c % (r * r) != 0 {
            size_check::fail(
                op,
                &[
                    t("the input's "),
                    n(c),
                    t(" channels are not a multiple of R² = "),
                    n(r * r),
                ],
            );
        }
        size_check::output_is(
            op,
            "channels",
            &[n(c), t(" / "), n(r), t("²")],
            c / (r * r),
            co,
        );
        size_check::output_is(op, "height", &[n(h), t("·"), n(r)], h * r, oh);
        size_check::output_is(op, "width", &[n(w), t("·"), n(r)], w * r, ow);
    } else {
        if h % r != 0 || w % r != 0 {
            size_check::fail(
                op,
                &[
                    t("the input's height "),
                    n(h),
                    t(" and width "),
                    n(w),
                    t(" must be multiples of R = "),
                    n(r),
                ],
            );
        }
        size_check::output_is(op, "channels", &[n(c), t("·"), n(r), t("²")], c * r * r, co);
        size_check::output_is(op, "height", &[n(h), t(" / "), n(r)], h / r, oh);
        size_check::output_is(op, "width", &[n(w), t(" / "), n(r)], w / r, ow);
    }
}

impl<T: WithDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// `(N, CO * R * R, H, W) -> (N, CO, H * R, W * R)`: each group of `R * R` channels becomes an `R x R` block
    /// of pixels (PyTorch's `pixel_shuffle(x, R)`, sub-pixel convolution's last step).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<1, 4, 1, 1>, Cpu> = Tensor::arange(); // 4 channels of one pixel
    /// let y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.pixel_shuffle::<2, _, _, _>();
    /// assert_eq!(y.to_array()[0][0], [[0., 1.], [2., 3.]]);
    /// let back: Tensor<f32, Rank4<1, 4, 1, 1>, Cpu> = y.pixel_unshuffle::<2, _, _, _>();
    /// assert_eq!(back.to_vec(), x.to_vec());
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::conv_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<1, 6, 2, 2>, Cpu> = Tensor::zeros();
    /// // 6 channels cannot make 2x2 blocks (R² = 4).
    /// let y: Tensor<f32, Rank4<1, 1, 4, 4>, Cpu> = x.pixel_shuffle::<2, _, _, _>();
    /// ```
    pub fn pixel_shuffle<const R: usize, const CO: usize, const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, Rank4<N, CO, OH, OW>, D> {
        const { check_shuffle("pixel_shuffle", true, R, [C, H, W], [CO, OH, OW]) };
        self.reshape_with_shape(Rank6::<N, CO, R, R, H, W>::default())
            .permute::<Shuffle>()
            .reshape_with_shape(Default::default())
    }

    /// `(N, C, H, W) -> (N, C * R * R, H / R, W / R)`: the inverse of [`Self::pixel_shuffle`] (PyTorch's
    /// `pixel_unshuffle(x, R)`).
    pub fn pixel_unshuffle<const R: usize, const CO: usize, const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, Rank4<N, CO, OH, OW>, D> {
        const { check_shuffle("pixel_unshuffle", false, R, [C, H, W], [CO, OH, OW]) };
        self.reshape_with_shape(Rank6::<N, C, OH, R, OW, R>::default())
            .permute::<Unshuffle>()
            .reshape_with_shape(Default::default())
    }
}

#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::Traced;
    use crate::dtype::FloatDType;

    impl<
            T: FloatDType,
            const N: usize,
            const C: usize,
            const H: usize,
            const W: usize,
            D: Device,
        > Traced<T, Rank4<N, C, H, W>, D>
    {
        /// See [`Tensor::pixel_shuffle`]; the gradient is unshuffled back.
        pub fn pixel_shuffle<const R: usize, const CO: usize, const OH: usize, const OW: usize>(
            &self,
        ) -> Traced<T, Rank4<N, CO, OH, OW>, D> {
            const { check_shuffle("pixel_shuffle", true, R, [C, H, W], [CO, OH, OW]) };
            self.reshape_with_shape(Rank6::<N, CO, R, R, H, W>::default())
                .permute::<Shuffle>()
                .reshape_with_shape(Default::default())
        }

        /// See [`Tensor::pixel_unshuffle`]; the gradient is shuffled back.
        pub fn pixel_unshuffle<
            const R: usize,
            const CO: usize,
            const OH: usize,
            const OW: usize,
        >(
            &self,
        ) -> Traced<T, Rank4<N, CO, OH, OW>, D> {
            const { check_shuffle("pixel_unshuffle", false, R, [C, H, W], [CO, OH, OW]) };
            self.reshape_with_shape(Rank6::<N, C, OH, R, OW, R>::default())
                .permute::<Unshuffle>()
                .reshape_with_shape(Default::default())
        }
    }
}
