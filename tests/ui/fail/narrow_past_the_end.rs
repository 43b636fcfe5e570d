// narrow::<Axis<1>, START, LEN> must stay inside the axis: 2 + 2 > 3.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    let _b = a.narrow::<Axis<1>, 2, 2>();
}
