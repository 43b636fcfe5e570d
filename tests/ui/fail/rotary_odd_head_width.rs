// Rotary embeddings rotate pairs of elements: a head width of 5 has an element left over.
use typed_tensor::nn::Rotary;
use typed_tensor::prelude::*;

fn main() {
    let _rope = Rotary::<f32, 5, Cpu>::rotate_half(16, 10000.0);
}
