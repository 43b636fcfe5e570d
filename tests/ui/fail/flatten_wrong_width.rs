// Flatten names its output width; it must be C * H * W of its input (here 4 * 2 * 2 = 16).
use typed_tensor::nn::{Flatten, Module};
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank4<3, 4, 2, 2>, Cpu>::zeros();
    let _y = Flatten::<12>.forward(x);
}
