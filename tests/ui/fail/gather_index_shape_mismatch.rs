// gather's index tensor agrees with the source on every axis but the gathered one.
use typed_tensor::prelude::*;

fn main() {
    let x: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let idx: Tensor<u32, Rank2<4, 5>, Cpu> = Tensor::zeros();
    let _g = x.gather::<Axis<1>, _, _>(&idx);
}
