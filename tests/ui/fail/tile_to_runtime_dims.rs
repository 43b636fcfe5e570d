// The typed `tile::<Dst>()` builds its target from the type, where a runtime-sized dim has no size (it read as 0,
// a multiple of anything, and gave an empty tensor): such a target fails the build, and the message says to give
// it as a value to `try_tile_with_shape`.
use typed_tensor::prelude::*;

fn main() {
    let a = Tensor::<f32, _, Cpu>::from_array([[1., 2.], [3., 4.]]);
    let _t: Tensor<f32, (usize, Const<4>), Cpu> = a.tile();
}
