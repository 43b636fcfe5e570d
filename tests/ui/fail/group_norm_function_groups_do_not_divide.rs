// group_norm splits each sample's channels into equal groups: 4 groups cannot split 6 channels.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank4<2, 6, 8, 8>, Cpu>::zeros();
    let _y = x.group_norm::<4>(None, None, 1e-5);
}
