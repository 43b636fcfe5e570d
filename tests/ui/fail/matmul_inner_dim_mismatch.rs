// (M, K) x (K, N): the inner dims must agree. This is the shape rule `matmul` is built on.
use typed_tensor::prelude::*;
use typed_tensor::shape::MatMulShape;

fn matmul_shape<L: MatMulShape<R>, R: Shape>() {}

fn main() {
    let _out = matmul_shape::<Rank2<2, 3>, Rank2<4, 5>>();
}
