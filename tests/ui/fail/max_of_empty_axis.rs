// max, min, argmax and argmin have no value over zero elements: reducing an axis of static size 0 fails the
// build (a runtime-sized empty axis is `Error::EmptyAxis` when the op runs).
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<3, 0>, Cpu> = Tensor::zeros();
    let _ok = a.sum::<Axis<1>>(); // a sum over nothing is 0
    let _m = a.max::<Axis<1>>();
}
