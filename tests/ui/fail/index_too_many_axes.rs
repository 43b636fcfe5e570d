// One index per axis at most: a matrix takes two.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let _x = a.i((0, 1, 0));
}
