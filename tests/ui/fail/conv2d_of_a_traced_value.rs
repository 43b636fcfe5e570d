// Traced values follow the tensors' size rules, and the error names the traced call: a 3x3 convolution with
// stride 2 and padding 1 turns 32x32 into 16x16, not 15x15.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank4<1, 3, 32, 32>, Cpu>::zeros();
    let w = Var::new(Tensor::<f32, Rank4<8, 3, 3, 3>, Cpu>::zeros());
    let _y: Traced<f32, Rank4<1, 8, 15, 15>, Cpu> = Traced::constant(x).conv2d(&w, Conv::<2, 1, 1, 1>);
}
