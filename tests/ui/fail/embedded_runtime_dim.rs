// The embedded device holds each tensor in an array of its static shape: a runtime (`usize`) dim has none.
use typed_tensor::prelude::*;

fn main() {
    let _x = Tensor::<f32, (usize, Const<3>), Embedded>::zeros_with_shape((2, Const));
}
