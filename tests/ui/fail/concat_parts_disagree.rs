// concat's parts agree on every axis but the joined one: (2, 4) and (3, 2) differ on axis 0.
use typed_tensor::prelude::*;

fn main() {
    let a = Tensor::<f32, Rank2<2, 4>, Cpu>::zeros();
    let b = Tensor::<f32, Rank2<3, 2>, Cpu>::zeros();
    let _y = Tensor::concat::<Axis<1>, 6>((&a, &b));
}
