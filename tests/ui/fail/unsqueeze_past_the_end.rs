// A new axis goes before an existing one or right after the last: a rank-1 tensor takes Axis<0> or Axis<1>.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    let _b = a.unsqueeze::<Axis<2>>();
}
