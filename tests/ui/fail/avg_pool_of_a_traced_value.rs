// Traced values follow the tensors' window rules, and the error names the traced call: 2x2 windows with
// stride 2 turn 6x6 into 3x3, not 2x2.
use typed_tensor::prelude::*;

fn main() {
    let x = Traced::constant(Tensor::<f32, Rank4<1, 1, 6, 6>, Cpu>::zeros());
    let _y: Traced<f32, Rank4<1, 1, 2, 2>, Cpu> = x.avg_pool2d(Pool2d::<2, 2, 0>);
}
