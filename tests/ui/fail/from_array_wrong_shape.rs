// The nested array's shape must be the declared one.
use typed_tensor::prelude::*;

fn main() {
    let _a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::from_array([[1., 2.], [3., 4.]]);
}
