// `#[layer]` writes a layer's `Module` impl for plain tensors and for traced values, reading `Value` as each. An
// impl that never names `Value` would be written twice as the same impl, so the attribute refuses it.
use typed_tensor::nn::{layer, Module};
use typed_tensor::prelude::*;

struct Double;

#[layer]
impl<const N: usize> Module<Tensor<f32, Rank1<N>, Cpu>> for Double {
    type Output = Tensor<f32, Rank1<N>, Cpu>;
    fn forward(&self, x: Tensor<f32, Rank1<N>, Cpu>) -> Self::Output {
        x * 2.0
    }
}

fn main() {}
