// permute takes one axis of the tensor per position: a rank-2 tensor has no Axis<2>.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let _b = a.permute::<(Axis<2>, Axis<0>)>();
}
