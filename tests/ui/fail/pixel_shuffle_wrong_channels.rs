// pixel_shuffle by 2 turns 4 channels into 1: asking for 2 output channels does not compile.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank4<1, 4, 3, 3>, Cpu>::zeros();
    let _y: Tensor<f32, Rank4<1, 2, 6, 6>, Cpu> = x.pixel_shuffle::<2, _, _, _>();
}
