// An empty lane has no median: taking it along an axis of static size 0 fails the build, naming median (a
// runtime-sized empty axis is `Error::EmptyAxis` from `try_median`).
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<3, 0>, Cpu> = Tensor::zeros();
    let _m = a.median::<Axis<1>>();
}
