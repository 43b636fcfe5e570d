// Grouped-query attention shares each key/value head among H / HK query heads: 3 cannot share 4.
use typed_tensor::nn::Sdpa;
use typed_tensor::prelude::*;

fn main() {
    let q = Tensor::<f32, Rank4<1, 4, 2, 8>, Cpu>::zeros();
    let kv = Tensor::<f32, Rank4<1, 3, 2, 8>, Cpu>::zeros();
    let _y = q.scaled_dot_product_attention(&kv, &kv, Sdpa::new());
}
