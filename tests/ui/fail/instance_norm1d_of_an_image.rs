// InstanceNorm1d normalises (N, C, L) sequences, as in PyTorch: an (N, C, H, W) image is InstanceNorm2d's.
use typed_tensor::nn::{InstanceNorm1d, Module};
use typed_tensor::prelude::*;

fn main() {
    let norm = InstanceNorm1d::<f32, 3, Cpu>::new();
    let _y = norm.forward(Tensor::<f32, Rank4<2, 3, 4, 4>, Cpu>::zeros());
}
