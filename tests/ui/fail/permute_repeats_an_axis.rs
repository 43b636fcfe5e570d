// permute takes each axis exactly once.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    let _b = a.permute::<(Axis<0>, Axis<0>, Axis<1>)>();
}
