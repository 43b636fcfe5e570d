// Reflect padding mirrors about the edge entries, so each side must be shorter than the axis: a 3x3 image
// cannot be reflect-padded by 3. Given as a type (`Reflect`), the mode is checked when the program is built;
// as a value (`PadMode::Reflect`), when it runs.
use typed_tensor::ops::Reflect;
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank4<1, 8, 3, 3>, Cpu>::zeros();
    let _y: Tensor<f32, Rank4<1, 8, 3, 9>, Cpu> = x.pad_mode::<Axis<3>, 3, 3, 9>(Reflect);
}
