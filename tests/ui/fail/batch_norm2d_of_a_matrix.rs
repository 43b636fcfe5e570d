// BatchNorm2d normalises (N, C, H, W) images, as in PyTorch: a (N, C) matrix is BatchNorm1d's input.
use typed_tensor::nn::{BatchNorm2d, Module};
use typed_tensor::prelude::*;

fn main() {
    let bn = BatchNorm2d::<f32, 4, Cpu>::new();
    let _y = bn.forward(Tensor::<f32, Rank2<8, 4>, Cpu>::zeros());
}
