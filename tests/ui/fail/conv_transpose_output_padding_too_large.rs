// Output padding must be smaller than the stride: with stride 2, a third extra row would be one no window
// reaches, and the convolution this one inverts could not map the output back to the input's size.
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, ConvGeometry};

fn main() {
    let x = Tensor::<f32, Rank4<1, 1, 2, 2>, Cpu>::zeros();
    let w = Tensor::<f32, Rank4<1, 1, 3, 3>, Cpu>::zeros();
    let _y: Tensor<f32, Rank4<1, 1, 5, 5>, Cpu> =
        x.conv_transpose2d(&w, Conv::<2, 1, 1, 1>.output_padding::<2, 2>());
}
