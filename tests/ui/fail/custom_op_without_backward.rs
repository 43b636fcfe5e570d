// A custom op with a forward kernel only cannot be traced: `backward()` would need its gradient.
use typed_tensor::autograd::Var;
use typed_tensor::ops::custom::{CustomOp1, HostView};
use typed_tensor::prelude::*;

struct Swish;

impl CustomOp1<f32> for Swish {
    fn name(&self) -> &'static str {
        "swish"
    }
    fn cpu_forward(&self, x: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
        for (y, &x) in y.iter_mut().zip(x.data) {
            *y = x / (1.0 + (-x).exp());
        }
        Ok(())
    }
}

fn main() {
    let w = Var::new(Tensor::<f32, Rank1<3>, Cpu>::zeros());
    let _y = w.trace().custom_op(Swish);
}
