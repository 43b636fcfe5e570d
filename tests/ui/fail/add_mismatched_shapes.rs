// Elementwise ops need equal shapes (or one a suffix of the other).
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank2<3, 2>, Cpu> = Tensor::zeros();
    let _c = &a + &b;
}
