//! Resizing NCHW images to a size in the type (PyTorch's `F.interpolate` with `nearest`, `bilinear` and
//! `bicubic`, `align_corners` either way). Each mode maps every output coordinate to a source coordinate and
//! mixes at most four neighbours along each axis, independently per axis, so a resize is a product with a fixed
//! `(in, out)` matrix per axis: every device runs it with its matmul kernel, no heap is needed on `Embedded`, and
//! the gradient is the products'. The matrices are dense, so the work grows with the input's size along each
//! axis (benches/README.md, "Resize", measures it against a direct loop).

use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{Rank2, Rank4};
use crate::tensor::Tensor;

/// How [`Tensor::interpolate`] computes an output pixel (PyTorch's `mode` and `align_corners`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// The source pixel `floor(out_index * in / out)` (PyTorch's `nearest`).
    Nearest,
    /// Linear in each axis between the two nearest source pixels. With `align_corners` the corner pixels of
    /// input and output coincide (`src = dst (in - 1) / (out - 1)`); without, pixel centres scale
    /// (`src = (dst + 0.5) in / out - 0.5`, clamped at 0).
    Bilinear {
        /// PyTorch's `align_corners`.
        align_corners: bool,
    },
    /// Cubic convolution over four source pixels per axis (Keys' kernel with `a = -0.75`, PyTorch's), indices
    /// clamped at the borders; coordinates as for `Bilinear`, without the clamp at 0.
    Bicubic {
        /// PyTorch's `align_corners`.
        align_corners: bool,
    },
}

/// The source coordinate of output index `dst` for an axis of `n_in -> n_out` (PyTorch's
/// `area_pixel_compute_source_index`).
fn source(dst: usize, n_in: usize, n_out: usize, align_corners: bool, cubic: bool) -> f64 {
    if align_corners {
        if n_out > 1 {
            dst as f64 * (n_in - 1) as f64 / (n_out - 1) as f64
        } else {
            0.0
        }
    } else {
        let src = (dst as f64 + 0.5) * n_in as f64 / n_out as f64 - 0.5;
        if cubic {
            src
        } else {
            src.max(0.0)
        }
    }
}

/// Keys' cubic convolution weights of the four taps at `floor(src) - 1 ..= floor(src) + 2` for fraction `t`.
fn cubic_weights(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

/// The `(n_in, n_out)` matrix whose column `j` holds the weights output `j` gives the input entries.
fn resize_matrix<T: FloatDType, D: Device, const N_IN: usize, const N_OUT: usize>(
    mode: Interpolation,
) -> Tensor<T, Rank2<N_IN, N_OUT>, D> {
    let mut fill = |m: &mut [T]| {
        m.fill(T::ZERO);
        let mut add = |i: usize, j: usize, w: f64| {
            let at = i * N_OUT + j;
            m[at] = T::from_f64(m[at].to_f64() + w);
        };
        let last = N_IN as isize - 1;
        for j in 0..N_OUT {
            match mode {
                Interpolation::Nearest => {
                    let i = (j * N_IN / N_OUT).min(N_IN - 1);
                    add(i, j, 1.0);
                }
                Interpolation::Bilinear { align_corners } => {
                    let src = source(j, N_IN, N_OUT, align_corners, false);
                    let i0 = (libm::floor(src) as usize).min(N_IN - 1);
                    let i1 = (i0 + 1).min(N_IN - 1);
                    let t = src - i0 as f64;
                    add(i0, j, 1.0 - t);
                    add(i1, j, t);
                }
                Interpolation::Bicubic { align_corners } => {
                    let src = source(j, N_IN, N_OUT, align_corners, true);
                    let base = libm::floor(src);
                    let weights = cubic_weights(src - base);
                    for (k, w) in weights.into_iter().enumerate() {
                        let i = (base as isize - 1 + k as isize).clamp(0, last);
                        add(i as usize, j, w);
                    }
                }
            }
        }
    };
    Tensor::filled_with("interpolate", Default::default(), &mut fill)
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// The image resized to `OH x OW` as `mode` says (PyTorch's `F.interpolate(x, size=(OH, OW), mode=..,
    /// align_corners=..)`). Both sizes must be at least 1 (a `const` assertion), and so must the input's.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::Interpolation;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[[[0., 3.]]]]); // (1, 1, 1, 2)
    /// let y: Tensor<f32, Rank4<1, 1, 1, 4>, Cpu> =
    ///     x.interpolate(Interpolation::Bilinear { align_corners: true });
    /// assert_eq!(y.to_vec(), [0., 1., 2., 3.]);
    /// let z: Tensor<f32, Rank4<1, 1, 1, 4>, Cpu> =
    ///     x.interpolate(Interpolation::Bilinear { align_corners: false });
    /// assert_eq!(z.to_vec(), [0., 0.75, 2.25, 3.]);
    /// ```
    pub fn interpolate<const OH: usize, const OW: usize>(
        &self,
        mode: Interpolation,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        const {
            assert!(
                OH > 0 && OW > 0 && H > 0 && W > 0,
                "interpolate: the input and output sizes must be at least 1"
            )
        };
        let rows = resize_matrix::<T, D, H, OH>(mode).t(); // (OH, H)
        rows.matmul(&self.matmul(&resize_matrix::<T, D, W, OW>(mode)))
    }
}

#[cfg(feature = "std")]
mod traced {
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
        /// The image resized to `OH x OW` (see [`Tensor::interpolate`]); each input pixel's gradient collects
        /// the output gradients it was mixed into, with their weights.
        pub fn interpolate<const OH: usize, const OW: usize>(
            &self,
            mode: Interpolation,
        ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
            const {
                assert!(
                    OH > 0 && OW > 0 && H > 0 && W > 0,
                    "interpolate: the input and output sizes must be at least 1"
                )
            };
            let rows = Traced::constant(resize_matrix::<T, D, H, OH>(mode).t());
            rows.matmul(&self.matmul(&resize_matrix::<T, D, W, OW>(mode)))
        }
    }
}
