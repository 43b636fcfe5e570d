// A two-input custom op with a forward kernel only cannot be traced: `backward()` would need its gradients.
use typed_tensor::autograd::Var;
use typed_tensor::ops::custom::{CustomOp2, HostView};
use typed_tensor::prelude::*;

struct Product;

impl CustomOp2<f32> for Product {
    fn name(&self) -> &'static str {
        "product"
    }
    fn cpu_forward(&self, a: HostView<'_, f32>, b: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
        for ((y, a), b) in y.iter_mut().zip(a.data).zip(b.data) {
            *y = a * b;
        }
        Ok(())
    }
}

fn main() {
    let w = Var::new(Tensor::<f32, Rank1<3>, Cpu>::zeros());
    let x = Tensor::<f32, Rank1<3>, Cpu>::ones();
    let _y = w.trace().custom_op2(&x, Product);
}
