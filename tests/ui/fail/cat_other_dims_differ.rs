// cat joins along one axis; the other dims must agree (3 columns vs 4).
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank2<1, 4>, Cpu> = Tensor::zeros();
    let _c = a.cat::<Axis<0>, 3, _>(&b);
}
