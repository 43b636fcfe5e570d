// Ops without a gradient (comparisons, argmax) exist on plain tensors only: a traced value must be read out
// explicitly (`.value()`), so nothing silently cuts the gradient.
use typed_tensor::autograd::Var;
use typed_tensor::prelude::*;

fn main() {
    let w = Var::new(Tensor::<f32, Rank2<2, 3>, Cpu>::zeros());
    let _best = w.trace().argmax::<Axis<1>>();
}
