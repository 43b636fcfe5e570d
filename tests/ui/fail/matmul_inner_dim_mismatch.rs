// (M, K) x (K, N): the inner dims must agree.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank2<4, 5>, Cpu> = Tensor::zeros();
    let _c = a.matmul(&b);
}
