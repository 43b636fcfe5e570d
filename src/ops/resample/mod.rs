//! Resampling along one axis: each output position mixes a few input positions with fixed weights (PyTorch's
//! `interpolate` modes: nearest, bilinear, bicubic) or averages a bin of them (adaptive average pooling). The ops
//! apply it per axis, the width first, as PyTorch's kernels combine each row before mixing rows: `interpolate`
//! and `adaptive_avg_pool1d/2d` (`tensor.rs`), their traced forms with the adjoint as gradient (`traced.rs`), the
//! device trait [`ResampleKernels`] and its kernels (`host.rs` for `Cpu` and `Embedded`, `cuda.rs` launching
//! `src/ops/resample/resample.cu`).
//!
//! An output reads only its own taps, as in PyTorch, so a NaN or an infinity reaches only the outputs that read
//! it: the products by fixed per-axis matrices this replaces multiplied every input by the zeros of the other
//! outputs' columns (`0 * NaN = NaN`), and one NaN in a 4x4 image gave 64 NaN of a nearest 8x8 resize
//! (PyTorch: 4). `Resample::taps` is the one definition of which inputs an output reads and how; the host
//! kernels run it, and `src/ops/resample/resample.cu` mirrors it with the same operations in the same order.

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::Kernels;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;

/// How [`Tensor::interpolate`](crate::Tensor::interpolate) computes an output pixel (PyTorch's `mode` and
/// `align_corners`).
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

/// What each output position along the resampled axis reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resample {
    /// An `interpolate` mode: up to four weighted taps.
    Interpolate(Interpolation),
    /// Adaptive average pooling: output `o` of `n -> out` is the mean of bin `[floor(o n / out), ceil((o + 1) n /
    /// out))`.
    AdaptiveMean,
}

/// The inputs one output reads: weighted taps (an interpolation, whose taps may repeat an index at a border, as
/// PyTorch's do) or the bin an adaptive average pooling averages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Taps {
    /// `sum(weight[k] * x[index[k]])` over the first `count` taps, in order.
    Weighted {
        index: [usize; 4],
        weight: [f64; 4],
        count: usize,
    },
    /// `sum(x[start..end]) / (end - start)`.
    Bin { start: usize, end: usize },
}

impl Resample {
    /// The taps of output `o` of an axis resampled from `n_in` to `n_out` entries (both at least 1).
    pub(crate) fn taps(self, o: usize, n_in: usize, n_out: usize) -> Taps {
        let weighted = |index: [usize; 4], weight: [f64; 4], count| Taps::Weighted {
            index,
            weight,
            count,
        };
        let last = n_in - 1;
        match self {
            Resample::AdaptiveMean => Taps::Bin {
                start: o * n_in / n_out,
                end: ((o + 1) * n_in).div_ceil(n_out),
            },
            Resample::Interpolate(Interpolation::Nearest) => weighted(
                [(o * n_in / n_out).min(last), 0, 0, 0],
                [1.0, 0.0, 0.0, 0.0],
                1,
            ),
            Resample::Interpolate(Interpolation::Bilinear { align_corners }) => {
                let src = source(o, n_in, n_out, align_corners, false);
                let i0 = (libm::floor(src) as usize).min(last);
                let t = src - i0 as f64;
                weighted([i0, (i0 + 1).min(last), 0, 0], [1.0 - t, t, 0.0, 0.0], 2)
            }
            Resample::Interpolate(Interpolation::Bicubic { align_corners }) => {
                let src = source(o, n_in, n_out, align_corners, true);
                let base = libm::floor(src);
                let at = |k: isize| (base as isize - 1 + k).clamp(0, last as isize) as usize;
                weighted([at(0), at(1), at(2), at(3)], cubic_weights(src - base), 4)
            }
        }
    }

    /// The op's name, for errors.
    pub const fn name(self) -> &'static str {
        match self {
            Resample::Interpolate(_) => "interpolate",
            Resample::AdaptiveMean => "adaptive_avg_pool",
        }
    }

    /// The op's code and `align_corners` flag as `src/ops/resample/resample.cu` takes them.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn code(self) -> (u64, u64) {
        match self {
            Resample::Interpolate(Interpolation::Nearest) => (0, 0),
            Resample::Interpolate(Interpolation::Bilinear { align_corners }) => {
                (1, align_corners as u64)
            }
            Resample::Interpolate(Interpolation::Bicubic { align_corners }) => {
                (2, align_corners as u64)
            }
            Resample::AdaptiveMean => (3, 0),
        }
    }
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

/// The family's kernels, which every device implements (`Cpu` and `Embedded` in `host.rs`, `Cuda` in `cuda.rs`);
/// [`crate::ops::Device`] requires it beside [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: each method initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait ResampleKernels: Kernels {
    /// `src` resampled along `axis` to `n_out` entries: a dense output of `src`'s dims with `n_out` on the axis,
    /// each output the sum of its taps' weighted inputs (accumulated in [`crate::dtype::WithDType::Acc`], taps in
    /// order) or its bin's mean (`Resample::taps`).
    fn resample<T: FloatDType>(
        op: Resample,
        src: (&Self::Buffer<T>, &Layout),
        axis: usize,
        n_out: usize,
        out: &mut Self::Out<T>,
    ) -> Result<()>;

    /// The adjoint of [`ResampleKernels::resample`] (its gradient): `grad`, with `n_out` entries along `axis`,
    /// spread back to `n_in` entries, each output's gradient times each tap's weight added into the tap's input
    /// (a bin's divided by its length into each entry), outputs in order, taps in order, rounded to `T` at each
    /// addition. An output's gradient reaches only the inputs it read.
    fn resample_backward<T: FloatDType>(
        op: Resample,
        grad: (&Self::Buffer<T>, &Layout),
        axis: usize,
        n_in: usize,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_follow_pytorch_at_the_borders() {
        // Bilinear, align_corners false, 2 -> 4: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25.
        let bilinear = Resample::Interpolate(Interpolation::Bilinear {
            align_corners: false,
        });
        let last = bilinear.taps(3, 2, 4);
        assert_eq!(
            last,
            Taps::Weighted {
                index: [1, 1, 0, 0],
                weight: [0.75, 0.25, 0.0, 0.0],
                count: 2
            }
        );
        // Bicubic clamps the four taps into the axis.
        let cubic = Resample::Interpolate(Interpolation::Bicubic {
            align_corners: true,
        });
        let Taps::Weighted { index, weight, .. } = cubic.taps(0, 3, 5) else {
            panic!("weighted taps")
        };
        assert_eq!(index, [0, 0, 1, 2]);
        assert_eq!(weight, [0.0, 1.0, 0.0, 0.0]);
        // Adaptive bins overlap when the sizes do not divide.
        assert_eq!(
            Resample::AdaptiveMean.taps(1, 5, 3),
            Taps::Bin { start: 1, end: 4 }
        );
    }
}
