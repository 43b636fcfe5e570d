// Several axes are listed once each, in increasing order.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    let _s = a.mean::<(Axis<2>, Axis<0>)>();
}
