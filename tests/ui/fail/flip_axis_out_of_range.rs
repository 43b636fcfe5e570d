// flip reverses the axes it names: a (2, 3) tensor has axes 0 and 1, not 2.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    let _y = x.flip::<(Axis<0>, Axis<2>)>();
}
