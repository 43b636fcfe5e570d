// unfold gives C * KH * KW channels: 3 channels of 2x2 patches are 12 columns, not 8.
use typed_tensor::prelude::*;
use typed_tensor::tensor::Conv;

fn main() {
    let x = Tensor::<f32, Rank4<1, 3, 4, 4>, Cpu>::zeros();
    let _cols: Tensor<f32, Rank4<1, 8, 3, 3>, Cpu> = x.unfold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
}
