// split's pieces tile the axis exactly: 2 pieces of 2 do not cover 5.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<5, 3>, Cpu> = Tensor::zeros();
    let _parts = a.split::<Axis<0>, 2, 2>();
}
