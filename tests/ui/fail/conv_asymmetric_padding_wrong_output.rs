// With asymmetric padding the output counts the zeros on both sides: 8 columns, a 3-wide kernel, one zero on
// the left and none on the right give (8 + 1 + 0 - 3) / 1 + 1 = 7 columns, not 8 ("same" needs one more).
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, ConvGeometry};

fn main() {
    let x: Tensor<f32, Rank4<1, 3, 8, 8>, Cpu> = Tensor::zeros();
    let w: Tensor<f32, Rank4<4, 3, 3, 3>, Cpu> = Tensor::zeros();
    let _y: Tensor<f32, Rank4<1, 4, 8, 8>, Cpu> =
        x.conv2d(&w, Conv::<1, 0, 1, 1>.asymmetric_padding::<1, 1, 1, 0>());
}
