// A 1-D convolution pads and strides its length only, so its geometry must be the same on both axes: a
// per-axis geometry, or asymmetric padding given for the width alone, does not compile.
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, ConvGeometry};

fn main() {
    let x: Tensor<f32, Rank3<1, 2, 8>, Cpu> = Tensor::zeros();
    let w: Tensor<f32, Rank3<4, 2, 3>, Cpu> = Tensor::zeros();
    let _y: Tensor<f32, Rank3<1, 4, 8>, Cpu> =
        x.conv1d(&w, Conv::<1, 0, 1, 1>.asymmetric_padding::<0, 0, 2, 0>());
}
