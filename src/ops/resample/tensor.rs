//! The family's `Tensor` methods: `interpolate` (PyTorch's `F.interpolate` with `nearest`, `bilinear`, `bicubic`)
//! and adaptive average pooling, each a resample along the width, then along the height.

use super::{Interpolation, Resample};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{Rank3, Rank4, Shape};
use crate::tensor::{call, written, Tensor};

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// This tensor resampled along runtime axis `axis` into a dense tensor of `shape` (this one's dims with the
    /// output size on the axis): the typed methods' body, compiled once per output shape.
    pub(crate) fn resample_axis<SO: Shape>(
        &self,
        op: Resample,
        axis: usize,
        shape: SO,
    ) -> Tensor<T, SO, D> {
        let n_out = shape.dims()[axis];
        let src = (self.buffer(), &self.layout());
        written!(
            Tensor::written_by,
            shape,
            op.name(),
            call::resample::<T, D>(op, src, axis, n_out)
        )
    }

    /// The adjoint of [`Self::resample_axis`]: this gradient spread back along `axis` into `shape` (the input's
    /// dims).
    #[cfg(feature = "std")] // autograd
    pub(crate) fn resample_backward_axis<SO: Shape>(
        &self,
        op: Resample,
        axis: usize,
        shape: SO,
    ) -> Tensor<T, SO, D> {
        let n_in = shape.dims()[axis];
        let grad = (self.buffer(), &self.layout());
        written!(
            Tensor::written_by,
            shape,
            op.name(),
            call::resample_backward::<T, D>(op, grad, axis, n_in)
        )
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// The image resized to `OH x OW` as `mode` says (PyTorch's `F.interpolate(x, size=(OH, OW), mode=..,
    /// align_corners=..)`). Both sizes must be at least 1 (a `const` assertion), and so must the input's. Each
    /// output reads the input pixels PyTorch's kernel reads (one, four or sixteen; a copy when the sizes are
    /// equal), so a NaN reaches only the outputs that read it.
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
        const { interpolate_sizes(H, W, OH, OW) };
        if H == OH && W == OW {
            // PyTorch copies in this case, for every mode: each output reads its own pixel only.
            return self.view_as(self.layout());
        }
        let op = Resample::Interpolate(mode);
        let rows: Tensor<T, Rank4<N, C, H, OW>, D> = self.resample_axis(op, 3, Default::default());
        rows.resample_axis(op, 2, Default::default())
    }

    /// Adaptive average pooling of `(N, C, H, W)` to `(N, C, OH, OW)` (PyTorch's `adaptive_avg_pool2d`; `OH = OW =
    /// 1` is global average pooling): output `(i, j)` is the mean of bin `[floor(i H / OH), ceil((i + 1) H / OH))`
    /// by the same along the width (bins overlap when the sizes do not divide). All four sizes must be at least 1
    /// (a `const` assertion).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = Tensor::arange(); // 0..9
    /// let y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.adaptive_avg_pool2d();
    /// assert_eq!(y.to_vec(), [2., 3., 5., 6.]); // overlapping 2x2 bins
    /// ```
    pub fn adaptive_avg_pool2d<const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, Rank4<N, C, OH, OW>, D> {
        const { adaptive_sizes(H, W, OH, OW) };
        let op = Resample::AdaptiveMean;
        let rows: Tensor<T, Rank4<N, C, H, OW>, D> = self.resample_axis(op, 3, Default::default());
        rows.resample_axis(op, 2, Default::default())
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
    Tensor<T, Rank3<N, C, L>, D>
{
    /// Adaptive average pooling of `(N, C, L)` to `(N, C, OL)` (see [`Tensor::adaptive_avg_pool2d`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[[1., 2., 3., 4., 5.]]]);
    /// let y: Tensor<f32, Rank3<1, 1, 3>, Cpu> = x.adaptive_avg_pool1d();
    /// assert_eq!(y.to_vec(), [1.5, 3., 4.5]); // bins [0, 2), [1, 4), [3, 5)
    /// ```
    pub fn adaptive_avg_pool1d<const OL: usize>(&self) -> Tensor<T, Rank3<N, C, OL>, D> {
        const { adaptive_sizes(1, L, 1, OL) };
        self.resample_axis(Resample::AdaptiveMean, 2, Default::default())
    }
}

/// `interpolate`'s build-time rule: every size at least 1.
pub(super) const fn interpolate_sizes(h: usize, w: usize, oh: usize, ow: usize) {
    crate::shape::size_check::nonzero_sizes("interpolate", [h, w], [oh, ow]);
}

/// Adaptive average pooling's build-time rule: every size at least 1 (an empty bin has no mean).
pub(super) const fn adaptive_sizes(h: usize, w: usize, oh: usize, ow: usize) {
    crate::shape::size_check::nonzero_sizes("adaptive_avg_pool", [h, w], [oh, ow]);
}
