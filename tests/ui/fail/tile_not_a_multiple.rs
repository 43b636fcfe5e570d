// tile names its result shape in the type: each dim must be a multiple of the input's.
use typed_tensor::prelude::*;

fn main() {
    let x: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::ones();
    let _ok: Tensor<f32, Rank2<4, 9>, Cpu> = x.tile();
    let _no: Tensor<f32, Rank2<4, 8>, Cpu> = x.tile();
}
