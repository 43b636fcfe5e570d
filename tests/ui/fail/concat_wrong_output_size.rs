// concat lays the parts end to end: 4 + 2 + 3 = 9 columns, not 8.
use typed_tensor::prelude::*;

fn main() {
    let a = Tensor::<f32, Rank2<2, 4>, Cpu>::zeros();
    let b = Tensor::<f32, Rank2<2, 2>, Cpu>::zeros();
    let c = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    let _y: Tensor<f32, Rank2<2, 8>, Cpu> = Tensor::concat::<Axis<1>, 8>((&a, &b, &c));
}
