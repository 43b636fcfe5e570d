// BatchNorm normalises channel axis 1 and its channel count is in its type: a layer built for 3 channels
// cannot take an input with 4.
use typed_tensor::nn::{BatchNorm2d, Module};
use typed_tensor::prelude::*;

fn main() {
    let bn = BatchNorm2d::<f32, 3, Cpu>::new();
    let x = Tensor::<f32, Rank4<2, 4, 5, 5>, Cpu>::zeros();
    let _y = bn.forward(x);
}
