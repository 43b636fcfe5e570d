//! The family's traced forms: the value is the tensor op's, the gradient the adjoint resample of each pass in
//! reverse order (height, then width), so an output's gradient reaches only the inputs it read.

use super::tensor::{adaptive_sizes, interpolate_sizes};
use super::{Interpolation, Resample};
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{Rank3, Rank4, MAX_RANK};
use crate::tensor::{padded_shape, Grad};

/// What a resample's rule keeps: the input's slot, the op, and the passes as `(padded axis, input size)` in the
/// order the forward ran them (an axis of `usize::MAX`: no pass).
type Captured = (Slot, Resample, [(usize, usize); 2]);

/// The gradient of one or two resampling passes: each pass's adjoint, the last pass first.
fn resample_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, op, passes): Captured,
    store: &mut Gradients,
) {
    let mut g = g;
    for &(axis, n_in) in passes.iter().rev().filter(|(axis, _)| *axis < MAX_RANK) {
        let mut dims = g.dims();
        dims.as_mut_slice()[axis] = n_in;
        g = g.resample_backward_axis(op, axis, padded_shape(&dims));
    }
    slot.give_padded(store, g);
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Traced<T, Rank4<N, C, H, W>, D>
{
    /// The image resized to `OH x OW` (see [`crate::Tensor::interpolate`]); each input pixel's gradient collects
    /// the output gradients it was mixed into, with their weights.
    pub fn interpolate<const OH: usize, const OW: usize>(
        &self,
        mode: Interpolation,
    ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
        const { interpolate_sizes(H, W, OH, OW) };
        let value = self.value.interpolate::<OH, OW>(mode);
        let passes = if H == OH && W == OW {
            [(usize::MAX, 0); 2] // a copy: the gradient passes through
        } else {
            [(MAX_RANK - 1, W), (MAX_RANK - 2, H)]
        };
        let captured = (self.slot(), Resample::Interpolate(mode), passes);
        record_with(value, &[&self.node], captured, resample_rule::<T, D>)
    }

    /// Adaptive average pooling (see [`crate::Tensor::adaptive_avg_pool2d`]); the gradient spreads each output's
    /// evenly over its bin.
    pub fn adaptive_avg_pool2d<const OH: usize, const OW: usize>(
        &self,
    ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
        const { adaptive_sizes(H, W, OH, OW) };
        let value = self.value.adaptive_avg_pool2d::<OH, OW>();
        let passes = [(MAX_RANK - 1, W), (MAX_RANK - 2, H)];
        let captured = (self.slot(), Resample::AdaptiveMean, passes);
        record_with(value, &[&self.node], captured, resample_rule::<T, D>)
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
    Traced<T, Rank3<N, C, L>, D>
{
    /// Adaptive average pooling (see [`crate::Tensor::adaptive_avg_pool1d`]).
    pub fn adaptive_avg_pool1d<const OL: usize>(&self) -> Traced<T, Rank3<N, C, OL>, D> {
        const { adaptive_sizes(1, L, 1, OL) };
        let value = self.value.adaptive_avg_pool1d::<OL>();
        let passes = [(MAX_RANK - 1, L), (usize::MAX, 0)];
        let captured = (self.slot(), Resample::AdaptiveMean, passes);
        record_with(value, &[&self.node], captured, resample_rule::<T, D>)
    }
}
