use std::hint::black_box;
use std::time::Instant;
use typed_tensor::prelude::*;
fn t<R>(name: &str, f: impl Fn() -> R) {
    let n = 2_000_000;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let s = Instant::now();
        for _ in 0..n {
            black_box(f());
        }
        best = best.min(s.elapsed().as_secs_f64() * 1e9 / n as f64);
    }
    println!("{name:30} {best:.1} ns");
}
fn main() {
    let a = Tensor::<f32, Rank2<4, 4>, Cpu>::rand(1);
    let v = Tensor::<f32, Rank1<10>, Cpu>::rand(2);
    t("sum_all 4x4", || black_box(&a).sum_all());
    t("sum axis1 4x4", || black_box(&a).sum::<Axis<1>>());
    t("sum axis0 4x4", || black_box(&a).sum::<Axis<0>>());
    t("max_keepdim axis1 4x4", || {
        black_box(&a).max_keepdim::<Axis<1>>()
    });
    t("softmax axis1 4x4", || black_box(&a).softmax::<Axis<1>>());
    t("softmax 10", || black_box(&v).softmax::<Axis<0>>());
    t("argmax 10", || black_box(&v).argmax::<Axis<0>>());
    t("add 4x4", || black_box(&a) + &a);
}
