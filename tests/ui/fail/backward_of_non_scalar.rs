// `backward()` exists only for rank-0 traced values: differentiate a loss, not a vector.
use typed_tensor::autograd::Var;
use typed_tensor::prelude::*;

fn main() {
    let w = Var::new(Tensor::<f32, Rank1<3>, Cpu>::ones());
    let _grads = w.trace().exp().backward();
}
