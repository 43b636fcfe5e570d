// A multi-head attention layer's width is its heads times the head width: 4 heads of 8 are 32 wide, not 16.
use typed_tensor::nn::MultiheadAttention;
use typed_tensor::prelude::*;

fn main() {
    let _attn = MultiheadAttention::<f32, 16, 4, 8, Cpu>::new(0);
}
