// A causal 3-D convolution over time (two slices of zeros before the depth, none after) keeps the 4 slices, but
// one zero on each side of a 3-wide kernel is needed to keep 8 rows and columns: with none they shrink to 6.
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, Conv3dGeometry};

fn main() {
    let x: Tensor<f32, Rank5<1, 2, 4, 8, 8>, Cpu> = Tensor::zeros();
    let w: Tensor<f32, Rank5<4, 2, 3, 3, 3>, Cpu> = Tensor::zeros();
    let _y: Tensor<f32, Rank5<1, 4, 4, 8, 8>, Cpu> =
        x.conv3d(&w, Conv::<1, 0, 1, 1>.asymmetric_padding_3d::<2, 0, 0, 0, 0, 0>());
}
