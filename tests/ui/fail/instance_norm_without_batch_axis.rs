// The per-channel norms take (N, C, ..): a single (C, L) sample needs its batch axis first.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank1<6>, Cpu>::zeros();
    let _y = x.instance_norm(None, None, 1e-5);
}
