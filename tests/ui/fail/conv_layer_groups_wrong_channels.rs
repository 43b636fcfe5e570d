// A grouped conv layer names its weight's channels per group (stable Rust cannot divide in a type): 32 input
// channels in 32 groups is 1 per group (MobileNet's depthwise 3x3), not 2.
use typed_tensor::nn::{Conv2d, Module};
use typed_tensor::prelude::*;

fn main() {
    let depthwise = Conv2d::<f32, 32, 32, 3, 56, 56, Cpu, 1, 1, 1, 32, 2>::new(0);
    let _y = depthwise.forward(Tensor::<f32, Rank4<1, 32, 56, 56>, Cpu>::zeros());
}
