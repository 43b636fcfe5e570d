// Nearest upsampling scales both spatial axes by one integer factor: 3 -> 7 is not one.
use typed_tensor::prelude::*;

fn main() {
    let x: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = Tensor::zeros();
    let _y: Tensor<f32, Rank4<1, 1, 7, 7>, Cpu> = x.upsample_nearest2d();
}
