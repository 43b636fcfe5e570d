// Explicit broadcast stretches size-1 dims and adds leading axes; a 4 cannot become a 3.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank1<4>, Cpu> = Tensor::zeros();
    let _b: Tensor<f32, Rank2<2, 3>, Cpu> = a.broadcast();
}
