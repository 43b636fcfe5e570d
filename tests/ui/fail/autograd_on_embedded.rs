// Autograd needs a device whose tensors share buffers: the embedded device is for inference.
use typed_tensor::autograd::Var;
use typed_tensor::prelude::*;

fn main() {
    let _w = Var::new(Tensor::<f32, Rank2<2, 2>, Embedded>::ones());
}
