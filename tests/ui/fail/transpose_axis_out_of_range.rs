// transpose swaps two axes of the tensor; Axis<3> is not one of a rank-3 tensor's.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    let _b = a.transpose::<Axis<0>, Axis<3>>();
}
