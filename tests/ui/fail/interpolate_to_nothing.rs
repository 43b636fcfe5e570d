// A resize needs at least one output pixel along each axis.
use typed_tensor::ops::Interpolation;
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank4<1, 1, 4, 4>, Cpu>::zeros();
    let _y: Tensor<f32, Rank4<1, 1, 0, 8>, Cpu> = x.interpolate(Interpolation::Nearest);
}
