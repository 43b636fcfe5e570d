// A rotary table is built for one head width: tables for 8 cannot rotate heads of 16.
use typed_tensor::nn::Rotary;
use typed_tensor::prelude::*;

fn main() {
    let rope = Rotary::<f32, 8, Cpu>::rotate_half(16, 10000.0);
    let q = Tensor::<f32, Rank4<1, 2, 4, 16>, Cpu>::zeros();
    let _q = q.rotary(&rope, 0);
}
