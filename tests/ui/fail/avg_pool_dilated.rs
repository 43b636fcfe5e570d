// Average pooling has no dilation (PyTorch's avg_pool2d takes none); only max pooling accepts `.dilation::<D>()`.
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Pool2d, PoolGeometry};

fn main() {
    let x = Tensor::<f32, Rank4<1, 1, 6, 6>, Cpu>::zeros();
    let _y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.avg_pool2d(Pool2d::<2, 2, 0>.dilation::<2>());
}
