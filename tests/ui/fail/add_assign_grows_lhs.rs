// `+=` keeps the left operand's type, so only the right one may be broadcast: a row cannot absorb a matrix.
use typed_tensor::prelude::*;

fn main() {
    let mut bias: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    let x: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    bias += &x;
}
