// one_hot's class count is in the type, and there must be at least one class.
use typed_tensor::prelude::*;

fn main() {
    let labels = Tensor::<u32, _, Cpu>::from_array([0, 1]);
    let _ok: Tensor<f32, Rank2<2, 2>, Cpu> = labels.one_hot::<2, f32>();
    let _none = labels.one_hot::<0, f32>();
}
