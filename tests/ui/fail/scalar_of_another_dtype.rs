// A scalar operand has the tensor's element type: an f64 does not add to an f32 tensor.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    let _b = &a + 1.0f64;
}
