// Tensors on different devices never mix: a `Cpu` tensor and an `Embedded` one are copied across with
// `to_device` first.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank1<3>, Embedded> = Tensor::zeros();
    let _c = &a + &b;
}
