// Implicit broadcasting aligns shapes on the right: (2,) does not end (2, 3).
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank1<2>, Cpu> = Tensor::zeros();
    let _c = a * b;
}
