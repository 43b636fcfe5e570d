// Negation needs a signed element type (i64 or a float).
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<u32, Rank1<3>, Cpu> = Tensor::ones();
    let _b = -a;
}
