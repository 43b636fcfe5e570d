// Ceil mode keeps the last partial window: 2x2 windows at stride 2 over a width of 5 give 3 columns, not 2.
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Pool2d, PoolGeometry};

fn main() {
    let x = Tensor::<f32, Rank4<1, 1, 4, 5>, Cpu>::zeros();
    let _y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>.ceil_mode());
}
