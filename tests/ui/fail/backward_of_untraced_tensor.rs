// A plain `Tensor` records nothing (inference pays nothing), so it has no `backward()`.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank1<3>, Cpu>::ones();
    let _grads = x.exp().sum_all().backward();
}
