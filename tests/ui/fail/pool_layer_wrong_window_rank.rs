// A window-generic pool layer pools as many axes as its window has: a 1-D window cannot pool (N, C, H, W) images.
use typed_tensor::nn::{MaxPool, Module, ReLU};
use typed_tensor::prelude::*;
use typed_tensor::tensor::Pool1d;

fn main() {
    let model = (ReLU, MaxPool::<_, Rank2<4, 4>>::new(Pool1d::<2, 2, 0>));
    let _y = model.forward(Tensor::<f32, Rank4<1, 3, 8, 8>, Cpu>::zeros());
}
