// A model is a tuple of layers; each layer's input type must be the previous layer's output type. Here the
// second layer expects 5 features but the first gives 8.
use typed_tensor::nn::{Linear, Module, ReLU};
use typed_tensor::prelude::*;

fn main() {
    let model = (Linear::<f32, 4, 8, Cpu>::new(0), ReLU, Linear::<f32, 5, 3, Cpu>::new(1));
    let x = Tensor::<f32, Rank2<2, 4>, Cpu>::zeros();
    let _y = model.forward(x);
}
