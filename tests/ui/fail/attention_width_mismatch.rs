// Queries and keys share their width E: (.., 8) queries cannot score (.., 16) keys.
use typed_tensor::nn::Sdpa;
use typed_tensor::prelude::*;

fn main() {
    let q = Tensor::<f32, Rank4<1, 2, 2, 8>, Cpu>::zeros();
    let k = Tensor::<f32, Rank4<1, 2, 3, 16>, Cpu>::zeros();
    let v = Tensor::<f32, Rank4<1, 2, 3, 8>, Cpu>::zeros();
    let _y = q.scaled_dot_product_attention(&k, &v, Sdpa::new());
}
