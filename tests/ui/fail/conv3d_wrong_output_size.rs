// A 3x3x3 convolution with no padding turns a 4x8x8 volume into 2x6x6, not 4x8x8 (padding 1 would keep it).
use typed_tensor::prelude::*;
use typed_tensor::tensor::Conv;

fn main() {
    let x: Tensor<f32, Rank5<1, 2, 4, 8, 8>, Cpu> = Tensor::zeros();
    let w: Tensor<f32, Rank5<4, 2, 3, 3, 3>, Cpu> = Tensor::zeros();
    let _y: Tensor<f32, Rank5<1, 4, 4, 8, 8>, Cpu> = x.conv3d(&w, Conv::<1, 0, 1, 1>);
}
