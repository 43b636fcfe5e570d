// layer_norm_affine normalises the trailing axes the weight names: a (2, 3) input ends with 3, not 2.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    let w = Tensor::<f32, Rank1<2>, Cpu>::ones();
    let _y = x.layer_norm_affine(Some(&w), None, 1e-5);
}
