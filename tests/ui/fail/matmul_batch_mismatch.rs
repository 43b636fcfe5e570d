// Batched products pair batch entries one to one: 2 batches cannot meet 5.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    let b: Tensor<f32, Rank3<5, 4, 6>, Cpu> = Tensor::zeros();
    let _c = a.matmul(&b);
}
