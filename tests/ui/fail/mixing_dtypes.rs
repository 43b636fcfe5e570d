// Element types never mix implicitly: convert with `to_dtype` first.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    let b: Tensor<f64, Rank1<3>, Cpu> = Tensor::zeros();
    let _c = &a + &b;
}
