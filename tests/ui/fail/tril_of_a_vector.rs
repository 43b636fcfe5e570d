// tril and triu take the triangle of the last two axes: a vector has no triangle.
use typed_tensor::prelude::*;

fn main() {
    let m: Tensor<f32, Rank2<3, 3>, Cpu> = Tensor::ones();
    let _ok = m.tril(0);
    let v: Tensor<f32, Rank1<3>, Cpu> = Tensor::ones();
    let _no = v.triu(0);
}
