// flatten merges axes 1..=2 of (2, 3, 4) into one of size 12: a result of (2, 3, 4)'s element count with another
// split, (4, 6), is a reshape, not this flatten.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank3<2, 3, 4>, Cpu>::zeros();
    let _y: Tensor<f32, Rank2<4, 6>, Cpu> = x.flatten::<Axis<1>, Axis<2>, _>();
}
