// A scan runs along an axis of the tensor: a matrix has no Axis<2>.
use typed_tensor::prelude::*;

fn main() {
    let m: Tensor<f32, Rank2<3, 4>, Cpu> = Tensor::ones();
    let _ok = m.cumsum::<Axis<1>>();
    let _no = m.cumsum::<Axis<2>>();
}
