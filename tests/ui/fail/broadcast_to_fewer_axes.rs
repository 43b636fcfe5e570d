// Broadcasting never drops axes.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<1, 3>, Cpu> = Tensor::zeros();
    let _b: Tensor<f32, Rank1<3>, Cpu> = a.broadcast();
}
