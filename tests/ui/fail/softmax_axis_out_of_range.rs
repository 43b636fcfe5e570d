// softmax and the norms work along an axis of the tensor: a rank-2 tensor has no Axis<2>.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let _p = a.softmax::<Axis<2>>();
}
