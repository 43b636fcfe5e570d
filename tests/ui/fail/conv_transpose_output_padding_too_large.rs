// Output padding must be smaller than the stride or the dilation (PyTorch's rule): with stride 2 and dilation 1,
// two extra rows are more than any input size of the convolution this one inverts could leave over.
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, ConvGeometry};

fn main() {
    let x = Tensor::<f32, Rank4<1, 1, 2, 2>, Cpu>::zeros();
    let w = Tensor::<f32, Rank4<1, 1, 3, 3>, Cpu>::zeros();
    let _y: Tensor<f32, Rank4<1, 1, 5, 5>, Cpu> =
        x.conv_transpose2d(&w, Conv::<2, 1, 1, 1>.output_padding::<2, 2>());
}
