// GroupNorm splits the channels into equal groups: 3 groups cannot split 4 channels.
use typed_tensor::nn::GroupNorm;
use typed_tensor::prelude::*;

fn main() {
    let _gn = GroupNorm::<f32, 3, 4, Cpu>::new();
}
