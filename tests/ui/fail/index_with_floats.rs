// Index tensors hold u32 or i64, not floats.
use typed_tensor::prelude::*;

fn main() {
    let x: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let idx: Tensor<f32, Rank1<2>, Cpu> = Tensor::zeros();
    let _g = x.index_select::<Axis<0>, _, _>(&idx);
}
