// As for `tile`: a runtime-sized dim in `repeat_interleave`'s target type fails the build, pointing at
// `try_repeat_interleave_with_shape`.
use typed_tensor::prelude::*;

fn main() {
    let a = Tensor::<f32, _, Cpu>::from_array([[1., 2.], [3., 4.]]);
    let _r: Tensor<f32, (Const<2>, usize), Cpu> = a.repeat_interleave::<Axis<1>, _>();
}
