// topk's K is in the type: it cannot pick more elements than the axis has.
use typed_tensor::prelude::*;

fn main() {
    let x: Tensor<f32, Rank2<2, 5>, Cpu> = Tensor::ones();
    let _ok = x.topk::<Axis<1>, 5>(true);
    let _no = x.topk::<Axis<1>, 6>(true);
}
