// Traced values follow the tensors' shape rules: broadcasting (4,) to (2, 3) fails the build for both.
use typed_tensor::prelude::*;

fn main() {
    let x = Var::new(Tensor::<f32, Rank1<4>, Cpu>::zeros());
    let _y: Traced<f32, Rank2<2, 3>, Cpu> = x.trace().broadcast();
}
