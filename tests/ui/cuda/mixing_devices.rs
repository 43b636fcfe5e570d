// Tensors on different devices never mix: move one with `to_device` first.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank1<3>, Cuda> = Tensor::zeros();
    let _c = &a + &b;
}
