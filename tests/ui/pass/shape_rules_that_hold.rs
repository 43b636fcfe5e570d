// Every rule of the gallery, satisfied. Its presence makes trybuild run `cargo build`, so the const-assert rules
// (reshape, narrow, broadcast, squeeze, permute) are checked in the failing cases.
use typed_tensor::prelude::*;
fn main() {
    let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::ones();
    let b: Tensor<f32, Rank1<3>, Cpu> = Tensor::arange();
    let _sum: Tensor<f32, Rank2<2, 3>, Cpu> = &a + &b;
    let _same = &a * &a;
    let _t: Tensor<f32, Rank2<3, 2>, Cpu> = a.t();
    let _r: Tensor<f32, Rank3<3, 1, 2>, Cpu> = a.reshape();
    let _n: Tensor<f32, Rank2<2, 2>, Cpu> = a.narrow::<Axis<1>, 1, 2>();
    let _bc: Tensor<f32, Rank3<4, 2, 3>, Cpu> = a.broadcast();
    let _p: Tensor<f32, Rank2<3, 2>, Cpu> = a.permute::<(Axis<1>, Axis<0>)>();
    let _s: Tensor<f32, Rank1<3>, Cpu> = a.narrow::<Axis<0>, 0, 1>().squeeze::<Axis<0>>();
    let _row: Tensor<f32, Rank1<3>, Cpu> = a.i(1);
    let _x: Tensor<f32, Rank0, Cpu> = a.i((1, 2));
    let _m: Tensor<u8, Rank2<2, 3>, Cpu> = a.gt(&b);
    let _i = Tensor::<u8, Rank1<3>, Cpu>::ones() + Tensor::<u8, Rank1<3>, Cpu>::ones();
    let _rows: Tensor<f32, Rank1<2>, Cpu> = a.sum::<Axis<1>>();
    let _keep: Tensor<f32, Rank2<2, 1>, Cpu> = a.max_keepdim::<Axis<1>>();
    let _both: Tensor<f32, Rank0, Cpu> = a.mean::<(Axis<0>, Axis<1>)>();
    let _idx: Tensor<u32, Rank1<3>, Cpu> = a.argmax::<Axis<0>>();
    let w: Tensor<f32, Rank2<3, 4>, Cpu> = Tensor::ones();
    let _mm: Tensor<f32, Rank2<2, 4>, Cpu> = a.matmul(&w);
    let batch: Tensor<f32, Rank3<5, 2, 3>, Cpu> = Tensor::ones();
    let _bmm: Tensor<f32, Rank3<5, 2, 4>, Cpu> = batch.matmul(&w);
    let _mv: Tensor<f32, Rank1<2>, Cpu> = a.matmul(&b);
}
