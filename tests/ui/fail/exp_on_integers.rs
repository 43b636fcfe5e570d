// Float math does not exist for integer tensors: cast first.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<u8, Rank1<3>, Cpu> = Tensor::ones();
    let _b = a.exp();
}
