// cat names its output size along the axis; 2 + 1 rows is 3, not 4.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank2<1, 3>, Cpu> = Tensor::zeros();
    let _c = a.cat::<Axis<0>, 4, _>(&b);
}
