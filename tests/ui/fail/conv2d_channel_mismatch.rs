// The weight's input channels (times the groups) must be the input's channels: 3 != 4.
use typed_tensor::prelude::*;
use typed_tensor::tensor::Conv;

fn main() {
    let x: Tensor<f32, Rank4<1, 3, 8, 8>, Cpu> = Tensor::zeros();
    let w: Tensor<f32, Rank4<4, 4, 3, 3>, Cpu> = Tensor::zeros();
    let _y: Tensor<f32, Rank4<1, 4, 6, 6>, Cpu> = x.conv2d(&w, Conv::<1, 0, 1, 1>);
}
