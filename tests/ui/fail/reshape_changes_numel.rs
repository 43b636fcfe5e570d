// reshape keeps the number of elements: 6 elements cannot become 8.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let _b: Tensor<f32, Rank2<2, 4>, Cpu> = a.reshape();
}
