// split_sizes cuts an axis into the sizes named: 4 + 2 + 2 = 8 does not cover an axis of 9.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank2<2, 9>, Cpu>::zeros();
    let (_q, _k, _v) = x.split_sizes::<Axis<1>, (Const<4>, Const<2>, Const<2>)>();
}
