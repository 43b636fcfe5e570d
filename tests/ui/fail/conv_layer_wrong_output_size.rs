// Conv and pool layers name their output size (stable Rust cannot compute it in a type); a size that does not
// follow from the input fails the build: 8x8 with a 3x3 kernel and no padding gives 6x6, not 8x8.
use typed_tensor::nn::{Conv2d, Module};
use typed_tensor::prelude::*;

fn main() {
    let conv = Conv2d::<f32, 1, 4, 3, 8, 8, Cpu>::new(0);
    let _y = conv.forward(Tensor::<f32, Rank4<2, 1, 8, 8>, Cpu>::zeros());
}
