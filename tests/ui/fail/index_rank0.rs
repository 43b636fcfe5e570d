// A scalar (rank 0) has no axis to index.
use typed_tensor::prelude::*;

fn main() {
    let s: Tensor<f32, Rank0, Cpu> = Tensor::zeros();
    let _x = s.i(0);
}
