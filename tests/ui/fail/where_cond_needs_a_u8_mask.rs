// where_cond is called on a u8 mask (as produced by comparisons), not on the data.
use typed_tensor::prelude::*;

fn main() {
    let x: Tensor<f32, Rank1<3>, Cpu> = Tensor::ones();
    let _y = x.where_cond(&x, &x);
}
