// In-place ops check shapes like the allocating ones.
use typed_tensor::prelude::*;

fn main() {
    let mut a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank2<3, 2>, Cpu> = Tensor::zeros();
    a += &b;
}
