// FromEnd<N> counts axes from the end (PyTorch's dim=-N): a rank-2 tensor has FromEnd<1> and FromEnd<2> only.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    let _y = x.softmax::<FromEnd<3>>();
}
