//! Pixel shuffle and unshuffle (PyTorch's `pixel_shuffle`/`pixel_unshuffle`): channels `C * R * R` traded for an
//! `R`-times larger image and back. Each is a reshape to rank 6, a permutation and a reshape back (one copy), so
//! every device runs it and the gradient is the inverse rearrangement. The factor `R` is named; the other sizes
//! come from the output type (`_` lets the compiler infer them) and are checked at build time.

use crate::dtype::WithDType;
use crate::ops::Device;
use crate::shape::{Axis, Rank4, Rank6};
use crate::tensor::Tensor;

/// `(N, C, R, R, H, W) -> (N, C, H, R, W, R)`: the shuffle's permutation.
type Shuffle = (Axis<0>, Axis<1>, Axis<4>, Axis<2>, Axis<5>, Axis<3>);
/// `(N, C, H, R, W, R) -> (N, C, R, R, H, W)`: the unshuffle's.
type Unshuffle = (Axis<0>, Axis<1>, Axis<3>, Axis<5>, Axis<2>, Axis<4>);

/// The sizes of a shuffle of `(N, C_IN, H, W)` into `(N, C_OUT, OH, OW)` by `R` agree.
const fn shuffle_fits(r: usize, [c_in, h, w]: [usize; 3], [c_out, oh, ow]: [usize; 3]) -> bool {
    r > 0 && c_in == c_out * r * r && oh == h * r && ow == w * r
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
    pub fn pixel_shuffle<const R: usize, const CO: usize, const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, Rank4<N, CO, OH, OW>, D> {
        const {
            assert!(
                shuffle_fits(R, [C, H, W], [CO, OH, OW]),
                "pixel_shuffle: the output must be (N, C / R^2, H R, W R)"
            )
        };
        self.reshape::<Rank6<N, CO, R, R, H, W>>()
            .permute::<Shuffle>()
            .reshape()
    }

    /// `(N, C, H, W) -> (N, C * R * R, H / R, W / R)`: the inverse of [`Self::pixel_shuffle`] (PyTorch's
    /// `pixel_unshuffle(x, R)`).
    pub fn pixel_unshuffle<const R: usize, const CO: usize, const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, Rank4<N, CO, OH, OW>, D> {
        const {
            assert!(
                shuffle_fits(R, [CO, OH, OW], [C, H, W]),
                "pixel_unshuffle: the output must be (N, C R^2, H / R, W / R)"
            )
        };
        self.reshape::<Rank6<N, C, OH, R, OW, R>>()
            .permute::<Unshuffle>()
            .reshape()
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
            const {
                assert!(
                    shuffle_fits(R, [C, H, W], [CO, OH, OW]),
                    "pixel_shuffle: the output must be (N, C / R^2, H R, W R)"
                )
            };
            self.reshape::<Rank6<N, CO, R, R, H, W>>()
                .permute::<Shuffle>()
                .reshape()
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
            const {
                assert!(
                    shuffle_fits(R, [CO, OH, OW], [C, H, W]),
                    "pixel_unshuffle: the output must be (N, C R^2, H / R, W / R)"
                )
            };
            self.reshape::<Rank6<N, C, OH, R, OW, R>>()
                .permute::<Unshuffle>()
                .reshape()
        }
    }
}
