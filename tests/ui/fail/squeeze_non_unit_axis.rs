// squeeze removes an axis of size 1 only.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let _b = a.squeeze::<Axis<0>>();
}
